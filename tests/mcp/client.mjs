// SPDX-License-Identifier: Apache-2.0
// hutch mcp driven by the official MCP TypeScript client, for
// tests/integration/mcp.sh.  Each line printed is one JSON fact the test
// checks: {"step": ..., ...}.
//
//   node client.mjs session stdio HUTCH_BIN [ARGS...]
//   node client.mjs session http URL TOKEN
//   node client.mjs vanish stdio MARKER HUTCH_BIN [ARGS...]
//   node client.mjs vanish http MARKER URL TOKEN
//   node client.mjs forge stdio HUTCH_BIN [ARGS...]
//   node client.mjs resources stdio HUTCH_BIN [ARGS...]
//   node client.mjs resources http URL TOKEN
//   node client.mjs concurrent http URL TOKEN
//   node client.mjs lifecycle stdio HUTCH_BIN [ARGS...]
//   node client.mjs snapshots stdio HUTCH_BIN [ARGS...]
//   node client.mjs snapshots http URL TOKEN
//   node client.mjs forks stdio HUTCH_BIN [ARGS...]
//   node client.mjs forks http URL TOKEN
//   node client.mjs llmsb stdio HUTCH_BIN [ARGS...]
//   node client.mjs llmsb http URL TOKEN
//     (HUTCH_TEST_LEAVE=1: the client goes without ending the session)
//
// The client checks each tool result's structuredContent against the
// tool's outputSchema itself (once tools/list has been read): a result
// that does not match throws, and the scenario ends with "exception".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

const [scenario, kind, ...rest] = process.argv.slice(2);
const say = (step, o = {}) => console.log(JSON.stringify({ step, ...o }));

function transport(args) {
  if (kind === "stdio") {
    const [bin, ...argv] = args;
    return new StdioClientTransport({ command: bin, args: ["mcp", ...argv], env: process.env, stderr: "inherit" });
  }
  const [url, token] = args;
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

const structured = (r) => r.structuredContent ?? {};
const text = (r) => (r.content ?? []).map((c) => c.text ?? "").join("");
const brief = (r) => ({ isError: Boolean(r.isError), text: text(r), ...structured(r) });

// A client connected, the tools listed: it checks results against the
// output schemas from then on.  call(name, arguments) calls a tool.
async function checked(args) {
  const client = new Client({ name: "hutch-test", version: "1.0.0" });
  const t = transport(args);
  await client.connect(t);
  await client.listTools();
  return { client, t, call: (name, a) => client.callTool({ name, arguments: a }) };
}

// The end of a scenario: the client goes without a word
// (HUTCH_TEST_LEAVE=1), or ends its session and closes.
async function end({ client, t }) {
  if (process.env.HUTCH_TEST_LEAVE) {
    say("left");
    process.exit(0);
  }
  if (kind === "http") await t.terminateSession();
  await client.close();
  say("closed");
}

async function session(args) {
  const client = new Client({ name: "hutch-test", version: "1.0.0" });
  const t = transport(args);
  await client.connect(t);
  say("initialize", {
    server: client.getServerVersion()?.name,
    tools: Boolean(client.getServerCapabilities()?.tools),
    protocol: t.protocolVersion ?? null,
    session: t.sessionId ?? null,
  });
  const toolList = (await client.listTools()).tools;
  const tools = toolList.map((x) => x.name).sort();
  say("tools/list", { tools });
  const hints = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];
  say("tool metadata", {
    titled: toolList.filter((x) => typeof x.title === "string").length,
    annotated: toolList.filter((x) => hints.every((h) => typeof x.annotations?.[h] === "boolean")).length,
    output: toolList.filter((x) => x.outputSchema?.type === "object").length,
    described: toolList.filter((x) =>
      Object.values(x.inputSchema.properties ?? {}).every((p) => typeof p.description === "string")).length,
    languages: toolList.find((x) => x.name === "sandbox_run_code")?.inputSchema.properties.language.enum ?? null,
  });

  const created = await client.callTool({ name: "sandbox_create", arguments: {} });
  const id = structured(created).id;
  say("create", { id, isError: Boolean(created.isError) });

  // A session across calls: what one call leaves, the next one sees.
  await client.callTool({ name: "sandbox_exec", arguments: { id, command: "echo kept > /tmp/state" } });
  const again = await client.callTool({ name: "sandbox_exec", arguments: { id, command: "cat /tmp/state; exit 3" } });
  say("exec", { stdout: structured(again).stdout, exit_code: structured(again).exit_code, isError: Boolean(again.isError) });

  await client.callTool({ name: "sandbox_write_file", arguments: { id, path: "/work/dir/hello.txt", content: "héllo\n" } });
  const read = await client.callTool({ name: "sandbox_read_file", arguments: { id, path: "/work/dir/hello.txt" } });
  say("read", { content: structured(read).content, text: text(read) });
  const bin = await client.callTool({
    name: "sandbox_write_file",
    arguments: { id, path: "/work/bin", content: Buffer.from([0, 255, 1, 2]).toString("base64"), encoding: "base64" },
  });
  const binRead = await client.callTool({ name: "sandbox_read_file", arguments: { id, path: "/work/bin" } });
  say("binary", { isError: Boolean(bin.isError), encoding: structured(binRead).encoding, content: structured(binRead).content });
  const ls = await client.callTool({ name: "sandbox_list_dir", arguments: { id, path: "/work", depth: 2 } });
  say("list_dir", { paths: structured(ls).paths.sort() });
  const code = await client.callTool({ name: "sandbox_run_code", arguments: { id, language: "sh", code: "echo $((6*7))" } });
  say("run_code", { stdout: structured(code).stdout });
  const timed = await client.callTool({ name: "sandbox_exec", arguments: { id, command: "sleep 30", timeout: 1 } });
  say("timeout", { timed_out: structured(timed).timed_out, exit_code: structured(timed).exit_code });

  // A cancelled call (notifications/cancelled, and over HTTP a closed
  // request) ends at once: the next call is answered right away.
  const abort = new AbortController();
  const cancelled = client
    .callTool({ name: "sandbox_exec", arguments: { id, command: "sleep 600" } }, undefined, { signal: abort.signal })
    .then(() => "finished", (e) => `rejected: ${e.name}`);
  setTimeout(() => abort.abort(), 500);
  say("cancel", { outcome: await cancelled });
  const t0 = Date.now();
  const next = await client.callTool({ name: "sandbox_exec", arguments: { id, command: "echo next" } });
  say("after cancel", { stdout: structured(next).stdout, seconds: (Date.now() - t0) / 1000 });

  // Errors: a tool's failure is a result with isError; bad requests are JSON-RPC errors.
  const missing = await client.callTool({ name: "sandbox_exec", arguments: { id: "nosuch", command: "true" } });
  say("unknown sandbox", { isError: Boolean(missing.isError), text: text(missing) });
  const escape = await client.callTool({ name: "sandbox_read_file", arguments: { id, path: "/../../../etc/hostname" } });
  say("read outside", { isError: Boolean(escape.isError), text: text(escape) });
  for (const [label, req] of [
    ["unknown tool", { name: "no_such_tool", arguments: {} }],
    ["missing command", { name: "sandbox_exec", arguments: { id } }],
    ["unknown language", { name: "sandbox_run_code", arguments: { id, language: "cobol", code: "x" } }],
  ]) {
    try {
      const r = await client.callTool(req);
      say(label, { code: null, isError: Boolean(r.isError), text: text(r) });
    } catch (e) {
      say(label, { code: e.code ?? null, message: String(e.message) });
    }
  }
  const listed = await client.callTool({ name: "sandbox_list", arguments: {} });
  say("list", { ids: structured(listed).sandboxes.map((s) => s.id) });
  const destroyed = await client.callTool({ name: "sandbox_destroy", arguments: { id } });
  say("destroy", { isError: Boolean(destroyed.isError) });
  const after = await client.callTool({ name: "sandbox_list", arguments: {} });
  say("list after destroy", { ids: structured(after).sandboxes.map((s) => s.id) });

  // A second sandbox left for the end of the session to remove.
  const left = await client.callTool({ name: "sandbox_create", arguments: {} });
  say("left", { id: structured(left).id });
  if (kind === "http") await t.terminateSession();
  await client.close();
  say("closed");
}

// Starts a long command and goes away in the middle of it, without a word.
async function vanish(marker, args) {
  const client = new Client({ name: "hutch-test", version: "1.0.0" });
  const t = transport(args);
  await client.connect(t);
  const created = await client.callTool({ name: "sandbox_create", arguments: {} });
  const id = structured(created).id;
  say("create", { id });
  client.callTool({ name: "sandbox_exec", arguments: { id, command: `sleep ${marker}` } }, undefined, {
    timeout: 600000,
  }).catch(() => {});
  setTimeout(() => {
    say("vanishing");
    process.exit(0);
  }, 1500);
}

// Code in the persistent interpreter writes well-formed answers on every
// pipe it holds, ahead of its own and for later calls, and from a thread
// it leaves running: none may be taken for a call's answer.
async function forge(args) {
  const client = new Client({ name: "hutch-test", version: "1.0.0" });
  await client.connect(transport(args));
  const created = await client.callTool({ name: "sandbox_create", arguments: {} });
  const id = structured(created).id;
  const answer = JSON.stringify({ result: "'forged'", error: null, figures: [], stdout: "forged\n", stderr: "", truncated: false });
  const forged = JSON.stringify(`${answer}\n${"0".repeat(32)} ${answer}\n`);
  const writer =
    "import os\n" +
    "def forge():\n" +
    "    for fd in range(3, 64):\n" +
    "        try:\n" +
    "            if os.readlink('/proc/self/fd/%d' % fd).startswith('pipe:'): os.write(fd, " + forged + ".encode() * 3)\n" +
    "        except OSError: pass\n";
  const py = async (step, code, o = {}) => {
    const r = await client.callTool({ name: "sandbox_python", arguments: { id, code, ...o } });
    say(step, { isError: Boolean(r.isError), text: text(r), result: structured(r).result ?? null, stdout: structured(r).stdout ?? null });
  };
  await py("ahead", writer + "forge()\n'genuine'");
  for (let i = 1; i <= 3; i++) await py(`next ${i}`, "'next'");
  await py("thread", writer + "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.5), forge()), daemon=True).start()");
  await py("during", "import time; time.sleep(1.5); 'slow'");
  await py("after", "3 * 3");
  // The requests are the driver's alone: input() finds no more.
  await py("input", "try:\n    r = input()\nexcept EOFError:\n    r = 'eof'\nr", { timeout: 10 });
  await client.close();
  say("closed");
}

// A sandbox's files as resources: listed, read, and watched.
async function resources(args) {
  const client = new Client({ name: "hutch-test", version: "1.0.0" });
  const t = transport(args);
  await client.connect(t);
  say("capabilities", { resources: client.getServerCapabilities()?.resources ?? null });
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push({ uri: n.params.uri, at: Date.now() }));
  await client.listTools();
  const id = structured(await client.callTool({ name: "sandbox_create", arguments: {} })).id;
  await client.callTool({ name: "sandbox_exec", arguments: { id, command:
    "mkdir -p /work/r && echo one > /work/r/a.txt && printf '\\377\\000' > /work/r/bin && ln -s /etc/passwd /work/r/link" } });
  const uri = `sandbox://${id}/work/r/a.txt`;
  const all = [];
  let page = await client.listResources();
  for (;;) {
    all.push(...page.resources);
    if (!page.nextCursor) break;
    page = await client.listResources({ cursor: page.nextCursor });
  }
  say("list", { found: all.some((r) => r.uri === uri), link: all.some((r) => r.uri.endsWith("/work/r/link")),
    mime: all.find((r) => r.uri === uri)?.mimeType ?? null });
  const read = await client.readResource({ uri });
  say("read", { text: read.contents[0].text ?? null, mime: read.contents[0].mimeType });
  const bin = await client.readResource({ uri: `sandbox://${id}/work/r/bin` });
  say("read binary", { blob: bin.contents[0].blob ?? null });
  for (const [label, u] of [["read link", `sandbox://${id}/work/r/link`], ["read missing", `sandbox://${id}/nope`],
    ["read other", "sandbox://0123/etc/passwd"]]) {
    try {
      await client.readResource({ uri: u });
      say(label, { code: null });
    } catch (e) {
      say(label, { code: e.code ?? null, message: String(e.message) });
    }
  }
  const templates = await client.listResourceTemplates();
  say("templates", { uriTemplate: templates.resourceTemplates[0]?.uriTemplate ?? null });

  const wait = async (n, seconds) => {
    const until = Date.now() + seconds * 1000;
    while (updates.length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    return updates.length >= n;
  };
  await client.subscribeResource({ uri });
  const later = `sandbox://${id}/work/r/later.txt`;
  await client.subscribeResource({ uri: later }); // a file that is not there yet
  let t0 = Date.now();
  await client.callTool({ name: "sandbox_exec", arguments: { id, command: "echo two > /work/r/a.txt" } });
  say("changed", { told: await wait(1, 15), uri: updates[0]?.uri ?? null, seconds: ((updates[0]?.at ?? Date.now()) - t0) / 1000 });
  // A change made while a call of the session still runs is told meanwhile.
  t0 = Date.now();
  const slow = client.callTool({ name: "sandbox_exec", arguments: { id, command: "echo made > /work/r/later.txt; sleep 6" } });
  const during = await wait(2, 15);
  const first = updates[1]?.at ?? Date.now();
  await slow;
  say("during a call", { told: during, uri: updates[1]?.uri ?? null, before_end: first < Date.now() - 1000,
    seconds: (first - t0) / 1000 });
  await client.unsubscribeResource({ uri });
  await client.callTool({ name: "sandbox_exec", arguments: { id, command: "echo three > /work/r/a.txt" } });
  await new Promise((r) => setTimeout(r, 5000));
  say("unsubscribed", { updates: updates.filter((u) => u.uri === uri).length });
  await client.callTool({ name: "sandbox_destroy", arguments: { id } });
  say("destroyed", { told: await wait(3, 15), uri: updates[2]?.uri ?? null });

  const prompts = await client.listPrompts();
  say("prompts", { names: prompts.prompts.map((p) => p.name).sort() });
  const got = await client.getPrompt({ name: "sandbox_task", arguments: { task: "print the date" } });
  say("prompt", { text: got.messages[0].content.text });
  if (kind === "http") await t.terminateSession();
  await client.close();
  say("closed");
}

// Two sessions over HTTP: one's long command does not hold the other's
// calls; a session's own requests wait in turn, at most 8 of them.
async function concurrent(args) {
  const open = async () => {
    const c = new Client({ name: "hutch-test", version: "1.0.0" });
    await c.connect(transport(args));
    await c.listTools();
    return c;
  };
  const a = await open(), b = await open();
  const ida = structured(await a.callTool({ name: "sandbox_create", arguments: {} })).id;
  const idb = structured(await b.callTool({ name: "sandbox_create", arguments: {} })).id;
  let t0 = Date.now();
  const long = a.callTool({ name: "sandbox_exec", arguments: { id: ida, command: "sleep 8; echo slept" } })
    .then((r) => ({ stdout: structured(r).stdout, seconds: (Date.now() - t0) / 1000 }));
  await new Promise((r) => setTimeout(r, 1000));
  let t1 = Date.now();
  const listed = await b.callTool({ name: "sandbox_list", arguments: {} });
  const ran = await b.callTool({ name: "sandbox_exec", arguments: { id: idb, command: "echo b" } });
  say("other session", { ids: structured(listed).sandboxes.map((s) => s.id), idb, stdout: structured(ran).stdout,
    seconds: (Date.now() - t1) / 1000 });
  // A's own requests wait behind its long one: 8 are held, the 9th refused.
  t1 = Date.now();
  const queued = await Promise.allSettled(Array.from({ length: 9 }, () =>
    a.callTool({ name: "sandbox_list", arguments: {} })));
  const refused = queued.filter((q) => q.status === "rejected");
  say("same session", { answered: queued.length - refused.length, refused: refused.length,
    status: refused.map((q) => q.reason?.code ?? null), why: refused.map((q) => String(q.reason?.message ?? q.reason)).join(" | "),
    seconds: (Date.now() - t1) / 1000 });
  say("long", await long);
  for (const c of [a, b]) {
    await c.transport.terminateSession();
    await c.close();
  }
  say("closed");
}

// sandbox_pause and sandbox_resume: a counter in the sandbox stands still
// while it is paused, what would run in it is refused, and it goes on once
// resumed; a paused sandbox is destroyed as any other, and so is one the
// session leaves paused.
const uptimeMs = () => Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;

async function lifecycle(args) {
  const client = new Client({ name: "hutch-test", version: "1.0.0" });
  await client.connect(transport(args));
  await client.listTools(); // the client checks results against the output schemas from here on
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const call = (name, a) => client.callTool({ name, arguments: a });
  const counter = async (id) => Number((structured(await call("sandbox_read_file", { id, path: "/tmp/n" })).content ?? "").trim() || 0);
  const id = structured(await call("sandbox_create", {})).id;
  say("create", { id });
  // Each round also logs the time it ran at, from /proc/uptime, which the
  // sandbox shares with the host (no time namespace; busybox's date has no
  // sub-second format): the log shows whether anything ran while it was
  // paused, however slowly a loaded machine answers the calls around it.
  await call("sandbox_exec", { id, command: "i=0; while :; do i=$((i+1)); echo $i > /tmp/n; read u _ </proc/uptime; echo $u >> /tmp/t; sleep 0.02; done >/dev/null 2>&1 &" });
  for (let i = 0; i < 100 && (await counter(id)) < 3; i++) await sleep(50);
  // How far it counts in a second when running, read as it will be read
  // around the pause (the calls' own time included).
  const c0 = await counter(id);
  await sleep(1000);
  const running = (await counter(id)) - c0;
  const before = await counter(id);
  const paused = await call("sandbox_pause", { id });
  const pausedAt = uptimeMs();
  say("pause", { isError: Boolean(paused.isError), paused: structured(paused).paused, method: structured(paused).method ?? null,
    text: text(paused) });
  await sleep(1000);
  const refused = {};
  for (const [name, a] of [["sandbox_exec", { command: "true" }], ["sandbox_python", { code: "x" }],
    ["sandbox_read_file", { path: "/tmp/n" }], ["sandbox_write_file", { path: "/tmp/w", content: "w" }],
    ["sandbox_list_dir", { path: "/tmp" }], ["sandbox_run_code", { language: "sh", code: "true" }]]) {
    const r = await call(name, { id, ...a });
    refused[name] = r.isError ? text(r) : "ran";
  }
  say("while paused", { refused });
  const again = await call("sandbox_pause", { id });
  say("pause again", { isError: Boolean(again.isError), text: text(again) });
  const resumingAt = uptimeMs();
  const resumed = await call("sandbox_resume", { id });
  const atResume = await counter(id);
  const stamps = (structured(await call("sandbox_read_file", { id, path: "/tmp/t" })).content ?? "")
    .split("\n").filter((l) => /^[0-9]+[.][0-9]+$/.test(l)).map((l) => Number(l) * 1000);
  say("resume", { isError: Boolean(resumed.isError), paused: structured(resumed).paused,
    paused_seconds: structured(resumed).paused_seconds ?? null, advanced_while_paused: atResume - before,
    advanced_while_running: running, paused_window_ms: resumingAt - pausedAt,
    ran_while_paused: stamps.filter((t) => t > pausedAt && t < resumingAt).length,
    ran_before: stamps.filter((t) => t <= pausedAt).length });
  let after = atResume;
  for (let i = 0; i < 100 && after <= atResume; i++) { await sleep(50); after = await counter(id); }
  say("after resume", { advances: after > atResume });
  const twice = await call("sandbox_resume", { id });
  say("resume again", { isError: Boolean(twice.isError), text: text(twice) });
  // A paused sandbox is destroyed as any other.
  await call("sandbox_pause", { id });
  let t0 = Date.now();
  const destroyed = await call("sandbox_destroy", { id });
  say("destroy paused", { isError: Boolean(destroyed.isError), seconds: (Date.now() - t0) / 1000 });
  const other = structured(await call("sandbox_create", {})).id;
  const left = await call("sandbox_pause", { id: other });
  say("left paused", { id: other, isError: Boolean(left.isError) });
  await client.close();
  say("closed");
}

// sandbox_snapshot and sandbox_reset (the server runs with --max-snapshots
// 2): a reset ends every process and empties the sandbox's files; a reset
// to a snapshot brings its files back; an image that is not one of the
// session's is refused, and so is a snapshot past the bound.
async function snapshots(args) {
  const session = await checked(args);
  const { call } = session;
  const id = structured(await call("sandbox_create", {})).id;
  say("create", { id });
  await call("sandbox_write_file", { id, path: "/root/f", content: "one" });
  const snap = await call("sandbox_snapshot", { id });
  say("snapshot", brief(snap));
  const image = structured(snap).image;
  await call("sandbox_write_file", { id, path: "/root/f", content: "two" });
  await call("sandbox_exec", { id, command: "sleep 1000 >/dev/null 2>&1 & echo t >/tmp/t" });
  const others = 'for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || echo "$p"; done';
  const before = structured(await call("sandbox_exec", { id, command: others })).stdout;
  const reset = await call("sandbox_reset", { id });
  const f = await call("sandbox_read_file", { id, path: "/root/f" });
  const tmp = await call("sandbox_read_file", { id, path: "/tmp/t" });
  const after = structured(await call("sandbox_exec", { id, command: others })).stdout;
  say("reset", { ...brief(reset), processes_before: before, processes_after: after,
    file_gone: Boolean(f.isError), tmp_gone: Boolean(tmp.isError) });
  const back = await call("sandbox_reset", { id, snapshot: image });
  say("reset to snapshot", { ...brief(back), content: structured(await call("sandbox_read_file", { id, path: "/root/f" })).content ?? null });
  say("reset to another image", brief(await call("sandbox_reset", { id, snapshot: "hutch-test-busybox" })));
  say("reset to no snapshot", brief(await call("sandbox_reset", { id, snapshot: image.replace(/-1$/, "-9") })));
  say("list after", { sandboxes: structured(await call("sandbox_list", {})).sandboxes });
  await call("sandbox_pause", { id });
  const paused = await call("sandbox_snapshot", { id });
  say("snapshot paused", brief(paused));
  say("snapshot past the bound", brief(await call("sandbox_snapshot", { id })));
  const revived = await call("sandbox_reset", { id });
  say("reset paused", { ...brief(revived), runs: !(await call("sandbox_exec", { id, command: "true" })).isError });
  await end(session);
}

// sandbox_fork, sandbox_create from a snapshot and sandbox_snapshot_delete
// (the server runs with --max-sandboxes 4 --max-snapshots 2): children
// start from the parent's files, not its /tmp or /dev/shm, and no write
// crosses between them; they count against --max-sandboxes; a paused
// parent is forked and stays paused; a snapshot is deleted only when no
// sandbox runs on it and no later snapshot lies over it.
async function forks(args) {
  const session = await checked(args);
  const { call } = session;
  const read = async (id, path) => {
    const r = await call("sandbox_exec", { id, command: `cat ${path}` });
    return r.isError ? null : structured(r).stdout;
  };
  const parent = structured(await call("sandbox_create", {})).id;
  await call("sandbox_write_file", { id: parent, path: "/root/f", content: "parent\n" });
  await call("sandbox_exec", { id: parent, command: "echo t > /tmp/t; echo s > /dev/shm/s; sleep 600 >/dev/null 2>&1 &" });
  const forked = await call("sandbox_fork", { id: parent, n: 2 });
  say("fork", { parent, ...brief(forked) });
  const [a, b] = structured(forked).children ?? [];
  say("children see", { a: await read(a, "/root/f"), b: await read(b, "/root/f"),
    tmp: await read(a, "/tmp/t"), shm: await read(b, "/dev/shm/s") });
  await call("sandbox_exec", { id: a, command: "echo a > /root/f; echo a > /tmp/a; echo a > /dev/shm/a" });
  say("a wrote", { parent: [await read(parent, "/root/f"), await read(parent, "/tmp/a"), await read(parent, "/dev/shm/a")],
    b: [await read(b, "/root/f"), await read(b, "/tmp/a"), await read(b, "/dev/shm/a")], a: await read(a, "/root/f") });
  const ps = async (id) => structured(await call("sandbox_exec", { id, command: "ps -o args" })).stdout ?? null;
  say("processes", { parent: await ps(parent), child: await ps(a) });
  say("list", { sandboxes: structured(await call("sandbox_list", {})).sandboxes });
  say("fork past the bound", brief(await call("sandbox_fork", { id: parent, n: 2 })));
  await call("sandbox_pause", { id: parent });
  const fromPaused = await call("sandbox_fork", { id: parent });
  const d = structured(fromPaused).children?.[0];
  const stillPaused = await call("sandbox_exec", { id: parent, command: "true" });
  say("fork paused", { ...brief(fromPaused), child_runs: await read(d, "/root/f"), parent_refused: text(stillPaused) });
  await call("sandbox_resume", { id: parent });
  const reset = await call("sandbox_reset", { id: a });
  say("reset child", { isError: Boolean(reset.isError), f: await read(a, "/root/f") });
  await call("sandbox_destroy", { id: b });
  await call("sandbox_destroy", { id: d });

  const s1 = structured(await call("sandbox_snapshot", { id: parent })).image;
  const fromSnap = await call("sandbox_create", { snapshot: s1 });
  const c = structured(fromSnap).id;
  say("create from snapshot", { ...brief(fromSnap), snapshot: s1, f: await read(c, "/root/f") });
  say("delete in use", brief(await call("sandbox_snapshot_delete", { snapshot: s1 })));
  const cc = structured(await call("sandbox_fork", { id: c })).children?.[0];
  const listed = structured(await call("sandbox_list", {})).sandboxes;
  say("fork of it", { image: listed.find((x) => x.id === cc)?.image ?? null, f: await read(cc, "/root/f") });
  await call("sandbox_exec", { id: c, command: "echo c > /root/g" });
  const s2 = structured(await call("sandbox_snapshot", { id: c })).image;
  await call("sandbox_destroy", { id: c });
  await call("sandbox_destroy", { id: cc });
  say("delete under another", { ...brief(await call("sandbox_snapshot_delete", { snapshot: s1 })), s2 });
  say("delete top", brief(await call("sandbox_snapshot_delete", { snapshot: s2 })));
  say("delete base", brief(await call("sandbox_snapshot_delete", { snapshot: s1 })));
  say("delete again", brief(await call("sandbox_snapshot_delete", { snapshot: s1 })));
  const s3 = await call("sandbox_snapshot", { id: parent });
  say("snapshot after", brief(s3));
  say("held", { ids: structured(await call("sandbox_list", {})).sandboxes.map((x) => x.id).sort(), parent, a });
  await end(session);
}

// llm-sandbox's MCP tools and resource, called as a client set up for
// llm-sandbox's server calls them (its tool names and arguments only):
// what tools/list says of them, their results' content (types and text),
// and that each execute_code has a sandbox of its own, gone after it.
async function llmsb(args) {
  const session = await checked(args);
  const { client, call } = session;
  const names = ["execute_code", "get_supported_languages", "get_language_details"];
  const listed = (await client.listTools()).tools.filter((t) => names.includes(t.name));
  say("tools", { tools: listed });
  const content = (r) => (r.content ?? []).map((c) => ({ type: c.type, mimeType: c.mimeType ?? null, text: c.text ?? null }));
  const full = (r) => ({ isError: Boolean(r.isError), content: content(r), structured: r.structuredContent ?? null });
  const langs = await call("get_supported_languages", {});
  say("supported", full(langs));
  const details = {};
  for (const language of [...JSON.parse(text(langs)), "cobol"])
    details[language] = full(await call("get_language_details", { language }));
  say("details", { details });
  const resources = (await client.listResources()).resources.filter((r) => r.uri === "sandbox://languages");
  const read = await client.readResource({ uri: "sandbox://languages" });
  say("resource", { listed: resources, contents: read.contents });
  const run = async (step, a) => say(step, full(await call("execute_code", a)));
  await run("hello", { code: "print('hello', 6 * 7)" });
  await run("hello all args", { code: "print('hi')", language: "python", libraries: null, timeout: 30 });
  await run("plot", { code: "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nplt.figure()\nplt.plot([3, 1])\nplt.show()\nprint('plotted')" });
  await run("raise", { code: "print('before')\n1 / 0" });
  await run("write", { code: "open('/root/left', 'w').write('x')\nprint('wrote')" });
  await run("fresh", { code: "import os\nprint(os.path.exists('/root/left'))" });
  await run("net", { code: "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('net')\nexcept OSError as e:\n    print('no net', e.errno)" });
  await run("timeout", { code: "while True: pass", timeout: 1 });
  await run("java", { code: "class Main {}", language: "java" });
  await run("cobol", { code: "x", language: "cobol" });
  await run("libraries", { code: "print(1)", libraries: ["six"] });
  await run("option library", { code: "print(1)", libraries: ["--index-url=http://x"] });
  say("left", { sandboxes: structured(await call("sandbox_list", {})).sandboxes });
  const own = await call("sandbox_create", {});
  say("own tools", { isError: Boolean(own.isError), id: structured(own).id ?? null });
  await end(session);
}

try {
  if (scenario === "session") await session(rest);
  else if (scenario === "forks") await forks(rest);
  else if (scenario === "llmsb") await llmsb(rest);
  else if (scenario === "snapshots") await snapshots(rest);
  else if (scenario === "lifecycle") await lifecycle(rest);
  else if (scenario === "resources") await resources(rest);
  else if (scenario === "concurrent") await concurrent(rest);
  else if (scenario === "forge") await forge(rest);
  else if (scenario === "vanish") await vanish(rest[0], rest.slice(1));
  else throw new Error(`unknown scenario ${scenario}`);
} catch (e) {
  say("exception", { message: String(e?.stack ?? e) });
  process.exit(1);
}
