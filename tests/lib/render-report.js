// Runs report.html's script against a minimal DOM and prints what the page
// shows: the title, the summary's cells, one line per task row, and, after
// a click on the row of the task given, the viewer's text.  (No browser on
// the test hosts: this checks the page's own code renders its data.)
//   node render-report.js REPORT.html TASK_ID
'use strict';
const fs = require('fs');
const [file, clickId] = process.argv.slice(2);
const html = fs.readFileSync(file, 'utf8');
const data = html.match(/<script type="application\/json" id="data">([\s\S]*?)<\/script>/)[1];
const code = html.match(/<script>([\s\S]*?)<\/script>/)[1];
class El {
  constructor(tag) { this.tag = tag; this.children = []; this.text = ''; this.className = ''; this.handlers = {}; }
  set textContent(t) { this.text = String(t); this.children = []; }
  get textContent() { return this.text + this.children.map((c) => c.textContent).join(''); }
  appendChild(c) { this.children.push(c); return c; }
  addEventListener(ev, f) { this.handlers[ev] = f; }
  rows() { return this.children.filter((c) => c.tag === 'tr'); }
}
const byId = { title: new El('h1'), summary: new El('table'), viewer: new El('div'), data: new El('script') };
byId.data.text = data;
const tbody = new El('tbody');
const document = {
  getElementById: (id) => byId[id],
  createElement: (tag) => new El(tag),
  querySelector: (sel) => (sel === '#tasks tbody' ? tbody : null),
};
new Function('document', code)(document);
console.log('title: ' + byId.title.textContent);
for (const r of byId.summary.rows()) console.log('summary: ' + r.children.map((c) => c.textContent).join(' | '));
for (const r of tbody.rows()) console.log('task: ' + r.children.map((c) => c.textContent).join(' | '));
const row = tbody.rows().find((r) => r.children[0].textContent === clickId);
if (row) {
  row.handlers.click();
  console.log('viewer: ' + JSON.stringify(byId.viewer.textContent));
}
