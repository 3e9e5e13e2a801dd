/* report.js: the script of report.html (report/page.html); SPDX-License-Identifier: Apache-2.0
 * The page reads without it.  It sorts and filters the task table, keeping
 * that in the page's fragment (#sort=-tokens&result=fail&q=text, so that a
 * link holds the view; open=all opens every trajectory), and opens a task's
 * trajectory for #task-ID (and for #ID, an older page's link).  It reads the page's own DOM and writes text
 * and attributes only: nothing of the page's data is ever parsed as HTML. */
'use strict';
(function () {
  const table = document.getElementById('tasks');
  const tbody = table ? table.tBodies[0] : null;
  const rows = tbody ? Array.from(tbody.rows) : [];
  const KEYS = ['id', 'result', 'score', 'status', 'time', 'steps', 'tokens'];
  const NUMERIC = { score: true, time: true, steps: true, tokens: true };
  const RANK = { error: 0, fail: 1, partial: 2, pass: 3 };
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
  const state = { sort: '', result: '', q: '' };
  const select = document.getElementById('filter-result');
  const search = document.getElementById('filter-text');
  const shown = document.getElementById('shown');

  function key(row, k) {
    if (NUMERIC[k]) return Number(row.dataset[k]) || 0;
    if (k === 'result') return RANK[row.dataset.result] || 0;
    return row.dataset[k] || '';
  }

  function matches(row) {
    const r = state.result;
    if (r.indexOf('error:') === 0) {
      if (row.dataset.result !== 'error' || row.dataset.kind !== r.slice(6)) return false;
    } else if (r && row.dataset.result !== r) {
      return false;
    }
    return !state.q || row.textContent.toLowerCase().indexOf(state.q.toLowerCase()) >= 0;
  }

  function apply() {
    if (!tbody) return;
    const desc = state.sort.charAt(0) === '-';
    const k = desc ? state.sort.slice(1) : state.sort;
    const order = rows.slice();
    if (KEYS.indexOf(k) >= 0) {
      order.sort(function (a, b) {
        const x = key(a, k), y = key(b, k);
        const c = typeof x === 'number' ? x - y : collator.compare(x, y);
        return desc ? -c : c;
      });
    }
    let n = 0;
    for (const row of order) {
      row.hidden = !matches(row);
      if (!row.hidden) n++;
      tbody.appendChild(row);
    }
    for (const th of table.tHead.rows[0].cells) {
      const s = th.dataset.sort;
      if (s) th.setAttribute('aria-sort', s === k ? (desc ? 'descending' : 'ascending') : 'none');
    }
    if (select) select.value = state.result;
    if (search && document.activeElement !== search) search.value = state.q;
    if (shown) shown.textContent = n === rows.length ? rows.length + ' tasks' : n + ' of ' + rows.length + ' tasks';
  }

  /* The view in the fragment, as it is now. */
  function save() {
    const p = new URLSearchParams();
    for (const name of ['sort', 'result', 'q']) if (state[name]) p.set(name, state[name]);
    const h = p.toString();
    history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
  }

  function openTask(body, scroll) {
    let d = body.closest('details');
    while (d) {
      d.open = true;
      d = d.parentElement ? d.parentElement.closest('details') : null;
    }
    if (scroll) body.closest('.task-detail').scrollIntoView();
  }

  function openAll(open) {
    for (const d of document.querySelectorAll('.task-detail > details')) d.open = open;
  }

  function fromHash() {
    const raw = location.hash.slice(1);
    if (!raw) return;
    if (raw.indexOf('=') >= 0) {
      const p = new URLSearchParams(raw);
      state.sort = p.get('sort') || '';
      state.result = p.get('result') || '';
      state.q = p.get('q') || '';
      apply();
      if (p.get('open') === 'all') openAll(true);
      return;
    }
    let target = document.getElementById(raw);
    if (!target) {
      /* report.html#ID: the task of that id. */
      let id = raw;
      try { id = decodeURIComponent(raw); } catch (e) { /* as it is */ }
      const row = rows.find(function (r) { return r.dataset.id === id; });
      if (row) target = document.getElementById('task-' + row.id.slice(4));
      else if (!tbody) target = document.querySelector('.task-body');
    }
    if (target && target.classList.contains('task-body')) openTask(target, true);
  }

  if (tbody) {
    for (const th of table.tHead.rows[0].cells) {
      const k = th.dataset.sort;
      if (!k) continue;
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = th.textContent;
      b.title = 'sort by ' + th.textContent;
      th.textContent = '';
      th.appendChild(b);
      b.addEventListener('click', function () {
        state.sort = state.sort === k ? '-' + k : k;
        apply();
        save();
      });
    }
    tbody.addEventListener('click', function (ev) {
      const row = ev.target.closest('tr.task');
      if (!row || ev.target.closest('a')) return;
      const body = document.getElementById('task-' + row.id.slice(4));
      if (body) openTask(body, true);
    });
    if (select) select.addEventListener('change', function () { state.result = select.value; apply(); save(); });
    if (search) search.addEventListener('input', function () { state.q = search.value; apply(); save(); });
    const controls = document.getElementById('controls');
    if (controls) {
      controls.hidden = false;
      controls.addEventListener('submit', function (ev) { ev.preventDefault(); });
    }
    const dc = document.getElementById('detail-controls');
    if (dc) {
      dc.hidden = false;
      dc.addEventListener('click', function (ev) {
        const b = ev.target.closest('button');
        if (b) openAll(b.dataset.open === '1');
      });
    }
    apply();
  }
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
