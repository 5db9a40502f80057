// acppeer.mjs drives `pablo acp --stdio` with the real ACP TypeScript client
// SDK (@agentclientprotocol/sdk, stable v1 profile). One Node process runs
// every scenario; each scenario starts its own pablo processes.
//
// The SDK logs and drops what it cannot parse instead of failing, so this
// script fails on any console.error or console.warn, on any stdout line of
// pablo that is not one JSON-RPC 2.0 object, and on any stop reason outside
// the five of ACP v1. It prints one JSON document: {"ok", "problems",
// "scenarios"}; the Go test (acppeer_test.go) reads it.
//
// Usage: node acppeer.mjs CONFIG_JSON, where the config names the SDK entry
// file, the pablo binary, the workspace and the scenarios' command lines.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { inspect } from "node:util";

const cfg = JSON.parse(process.argv[2]);
const acp = await import(pathToFileURL(cfg.sdk).href);

const problems = [];
const fail = (msg) => problems.push(msg);
for (const level of ["error", "warn"]) {
  const orig = console[level].bind(console);
  console[level] = (...args) => {
    fail(`the SDK logged console.${level}: ${args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 4 }))).join(" ")}`);
    orig(...args);
  };
}
process.on("unhandledRejection", (err) => fail(`unhandled rejection: ${err?.stack ?? err}`));

const children = []; // every pablo process started, ended before exit
const peers = []; // every connection, for the diagnostics of a failed scenario
let current = ""; // the scenario running
const STOP_REASONS = new Set(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]);
const TIMEOUT_MS = cfg.timeoutMs ?? 30000;

// within rejects when p does not settle in time, naming what it waited for.
function within(what, p, ms = TIMEOUT_MS) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// checkedStdout passes pablo's stdout through unchanged and records each
// line: it must be a JSON object with jsonrpc "2.0". frames keeps them in
// arrival order, so a test can ask what came after a response.
function checkedStdout(label, readable, frames) {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let pending = "";
  const check = (line) => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      fail(`${label}: a stdout line is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    if (msg === null || typeof msg !== "object" || Array.isArray(msg) || msg.jsonrpc !== "2.0") {
      fail(`${label}: a stdout line is not a JSON-RPC 2.0 object: ${line.slice(0, 200)}`);
      return;
    }
    frames.push(msg);
  };
  return readable.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        try {
          pending += decoder.decode(chunk, { stream: true });
        } catch {
          fail(`${label}: stdout is not UTF-8`);
        }
        let i;
        while ((i = pending.indexOf("\n")) >= 0) {
          check(pending.slice(0, i));
          pending = pending.slice(i + 1);
        }
        controller.enqueue(chunk);
      },
      flush() {
        if (pending.length > 0) fail(`${label}: stdout ended inside a line: ${pending.slice(0, 200)}`);
      },
    }),
  );
}

// start runs one pablo process and connects the SDK's client to it.
function start(label, command, args, { cwd, env, permission, requests } = {}) {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], cwd, env: env ?? process.env });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => {
    if (stderr.length < 65536) stderr += d;
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const frames = [];
  const updates = new Map(); // sessionId → [update]
  const permissions = [];
  const waiters = new Set(); // functions called with each update
  children.push(child);
  const scenario = current;
  let app = acp
    .client()
    .onNotification("session/update", ({ params }) => {
      if (!updates.has(params.sessionId)) updates.set(params.sessionId, []);
      updates.get(params.sessionId).push(params.update);
      for (const w of waiters) w(params.sessionId, params.update);
    })
    .onRequest("session/request_permission", async ({ params, signal }) => {
      permissions.push(params);
      if (!permission) {
        fail(`${label}: an unexpected permission request for ${params.toolCall?.toolCallId}`);
        return { outcome: { outcome: "cancelled" } };
      }
      return permission(params, signal);
    });
  // requests: handlers of extension methods, by method name.
  for (const [method, fn] of Object.entries(requests ?? {})) {
    app = app.onRequest(method, (raw) => raw, async ({ params }) => fn(params));
  }
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), checkedStdout(label, Readable.toWeb(child.stdout), frames)));
  const peer = {
    label,
    child,
    conn,
    agent: conn.agent,
    frames,
    updates,
    permissions,
    waiters,
    scenario,
    exited,
    stderr: () => stderr,
    // request sends one request and fails the scenario on a timeout.
    request: (method, params, options) => within(`${label} ${method}`, conn.agent.request(method, params, options)),
    // prompt sends one text prompt and checks its stop reason.
    async prompt(sessionId, text, options) {
      const r = await peer.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, options);
      if (!STOP_REASONS.has(r?.stopReason)) fail(`${label}: stop reason ${JSON.stringify(r?.stopReason)} is none of the five`);
      return r;
    },
    text: (sessionId) =>
      (updates.get(sessionId) ?? [])
        .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
        .map((u) => u.content.text)
        .join(""),
    // close ends stdin, as an editor does, and waits for the exit.
    async close() {
      child.stdin.end();
      const r = await within(`${label} to exit after EOF`, exited);
      conn.close();
      return r;
    },
  };
  peers.push(peer);
  return peer;
}

function expect(cond, msg) {
  if (!cond) fail(msg);
  return cond;
}

async function initialize(peer, { durable }) {
  const init = await peer.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  expect(init.protocolVersion === 1, `${peer.label}: initialize chose protocol ${init.protocolVersion}, want 1`);
  if (durable) expect(init.agentCapabilities?.loadSession === true, `${peer.label}: loadSession is not advertised with a store`);
  return init;
}

const newSession = async (peer, cwd = cfg.workspace) =>
  (await peer.request("session/new", { cwd, mcpServers: [] })).sessionId;

const scenarios = {};

// basic: initialize → new → prompt → updates → end_turn; a second prompt in
// the session continues it; two sessions prompted at once; then kill -9 and
// a new process lists and loads the sessions and continues one.
scenarios.basic = async () => {
  const a = start("basic", cfg.bin, cfg.basic.args, { cwd: cfg.workspace });
  await initialize(a, { durable: true });
  const s1 = await newSession(a);
  const r1 = await a.prompt(s1, "first");
  expect(r1.stopReason === "end_turn", `basic: first prompt stopped ${r1.stopReason}`);
  expect(a.text(s1) === cfg.basic.reply, `basic: the updates carry ${JSON.stringify(a.text(s1))}, want ${JSON.stringify(cfg.basic.reply)}`);
  const r2 = await a.prompt(s1, "second");
  expect(r2.stopReason === "end_turn", `basic: second prompt stopped ${r2.stopReason}`);
  expect(a.text(s1) === cfg.basic.reply + cfg.basic.reply, `basic: after two prompts the session's text is ${JSON.stringify(a.text(s1))}`);

  const [s2, s3] = await Promise.all([newSession(a), newSession(a)]);
  const both = await Promise.all([a.prompt(s2, "left"), a.prompt(s3, "right")]);
  expect(both.every((r) => r.stopReason === "end_turn"), `basic: concurrent prompts stopped ${both.map((r) => r.stopReason)}`);
  for (const s of [s2, s3]) expect(a.text(s) === cfg.basic.reply, `basic: concurrent session ${s} got ${JSON.stringify(a.text(s))}`);
  expect(new Set([s1, s2, s3]).size === 3, "basic: session IDs repeat");

  a.child.kill("SIGKILL");
  const gone = await within("the killed process to exit", a.exited);
  expect(gone.signal === "SIGKILL", `basic: kill -9 ended the process with ${JSON.stringify(gone)}`);
  a.conn.close();

  const b = start("basic-after-kill", cfg.bin, cfg.basic.args, { cwd: cfg.workspace });
  await initialize(b, { durable: true });
  const list = await b.request("session/list", { cwd: cfg.workspace });
  const listed = new Map((list.sessions ?? []).map((s) => [s.sessionId, s]));
  for (const s of [s1, s2, s3]) {
    expect(listed.has(s), `basic: session/list after the kill lacks ${s}: ${JSON.stringify(list)}`);
    if (listed.has(s)) expect(listed.get(s).cwd === cfg.workspace, `basic: session ${s} is listed with cwd ${listed.get(s).cwd}`);
  }
  await b.request("session/load", { sessionId: s1, cwd: cfg.workspace, mcpServers: [] });
  expect(b.text(s1) === cfg.basic.reply + cfg.basic.reply, `basic: session/load replayed ${JSON.stringify(b.text(s1))}, want both earlier replies`);
  const replayedUser = (b.updates.get(s1) ?? []).filter((u) => u.sessionUpdate === "user_message_chunk").length;
  const r3 = await b.prompt(s1, "third");
  expect(r3.stopReason === "end_turn", `basic: the loaded session's prompt stopped ${r3.stopReason}`);
  expect(b.text(s1) === cfg.basic.reply.repeat(3), `basic: the loaded session continued with ${JSON.stringify(b.text(s1))}`);
  const exit = await b.close();
  expect(exit.code === 0, `basic: EOF ended pablo with ${JSON.stringify(exit)}: ${b.stderr()}`);
  return { sessions: 3, replayedUserChunks: replayedUser };
};

// cancel: a prompt whose tool call (shell.run sleep) is in flight is
// cancelled by session/cancel and by $/cancel_request; each answers
// cancelled, and no update of the session follows its response.
scenarios.cancel = async () => {
  const c = start("cancel", cfg.bin, cfg.cancel.args, { cwd: cfg.workspace });
  await initialize(c, { durable: false });
  const out = {};
  for (const how of ["session/cancel", "$/cancel_request"]) {
    const s = await newSession(c);
    const controller = new AbortController();
    const started = waitForUpdate(c, s, (u) => u.sessionUpdate === "tool_call");
    const answer = c.prompt(s, "sleep", how === "$/cancel_request" ? { cancellationSignal: controller.signal } : undefined);
    const call = await within(`${how}: the tool_call update`, started);
    // Mid-tool: the shell command itself is running, not just admitted.
    await within(`${how}: the shell command to run`, processRunning(cfg.cancel.marker));
    expect(call.kind === "execute", `cancel: shell.run's tool_call has kind ${call.kind}, want execute`);
    expect(call.status === "pending", `cancel: the tool_call's status is ${call.status}, want pending`);
    expect(call.rawInput && typeof call.rawInput === "object" && String(call.rawInput.command).includes(cfg.cancel.marker), `cancel: the tool_call's raw input is ${JSON.stringify(call.rawInput)}`);
    if (how === "session/cancel") await c.agent.notify("session/cancel", { sessionId: s });
    else controller.abort();
    const t0 = Date.now();
    const r = await answer;
    out[how] = { ms: Date.now() - t0 };
    expect(r.stopReason === "cancelled", `cancel (${how}): stopped ${r.stopReason}, want cancelled`);
    const at = c.frames.length;
    // More traffic after the response: any stray update would come first.
    await newSession(c);
    const late = c.frames.slice(at).filter((f) => f.method === "session/update" && f.params?.sessionId === s);
    expect(late.length === 0, `cancel (${how}): ${late.length} updates of the session after its response: ${JSON.stringify(late).slice(0, 300)}`);
  }
  const exit = await c.close();
  expect(exit.code === 0, `cancel: EOF ended pablo with ${JSON.stringify(exit)}: ${c.stderr()}`);
  return out;
};

// crash: kill -9 while a prompt's shell.run runs; a new process loads the
// session and reports that call's outcome as unknown (a failed update whose
// raw output says unknown_outcome), and never runs it again.
scenarios.crash = async () => {
  const a = start("crash", cfg.bin, cfg.crash.args, { cwd: cfg.workspace });
  await initialize(a, { durable: true });
  const s = await newSession(a);
  const answer = a.prompt(s, "sleep").catch(() => null); // never answered: the process dies
  await within("the crash tool_call update", waitForUpdate(a, s, (u) => u.sessionUpdate === "tool_call"));
  await within("the crash shell command to run", processRunning(cfg.cancel.marker));
  a.child.kill("SIGKILL");
  await within("the killed process to exit", a.exited);
  a.conn.close();
  await answer;
  await within("the killed process's shell command to end", processGone(cfg.cancel.marker));

  const b = start("crash-after-kill", cfg.bin, cfg.crash.args, { cwd: cfg.workspace });
  await initialize(b, { durable: true });
  await b.request("session/load", { sessionId: s, cwd: cfg.workspace, mcpServers: [] });
  const unknown = (b.updates.get(s) ?? []).filter(
    (u) => (u.sessionUpdate === "tool_call_update" || u.sessionUpdate === "tool_call") && u.status === "failed" && u.rawOutput?.status === "unknown_outcome",
  );
  expect(unknown.length === 1, `crash: the loaded session reports ${unknown.length} unknown outcomes, want 1: ${JSON.stringify(b.updates.get(s) ?? []).slice(0, 600)}`);
  expect(!(await isRunning(cfg.cancel.marker)), "crash: loading the session ran the unknown call again");
  const exit = await b.close();
  expect(exit.code === 0, `crash: EOF ended pablo with ${JSON.stringify(exit)}: ${b.stderr()}`);
  return { unknown: unknown.length };
};

// permission: a call the approver gates becomes session/request_permission
// bound to that call, with ACP's four options. The model reads the same
// file twice: allow_once and reject_once answer one call (the second is
// asked again), allow_always and reject_always the rest of the task's
// calls of the same shape (asked once); a cancelled outcome rejects; a
// rejected call fails and the turn goes on.
scenarios.permission = async () => {
  const answers = new Map(); // sessionId → an option kind | "cancelled" | "prompt-cancelled"
  const p = start("permission", cfg.bin, cfg.permission.args, {
    cwd: cfg.workspace,
    permission: async (params) => {
      const want = answers.get(params.sessionId);
      const kinds = params.options.map((o) => o.kind);
      expect(["allow_once", "allow_always", "reject_once", "reject_always"].every((k) => kinds.includes(k)), `permission: options are ${kinds}`);
      if (want === "cancelled") return { outcome: { outcome: "cancelled" } };
      if (want === "prompt-cancelled") {
        // The user cancels the prompt while asked: the client sends
        // session/cancel, then answers every pending request cancelled.
        await p.agent.notify("session/cancel", { sessionId: params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      }
      const opt = params.options.find((o) => o.kind === want);
      return { outcome: { outcome: "selected", optionId: opt.optionId } };
    },
  });
  await initialize(p, { durable: false });
  const out = {};
  const cases = {
    allow_once: { asked: 2, ends: ["completed", "completed"] },
    allow_always: { asked: 1, ends: ["completed", "completed"] },
    reject_once: { asked: 2, ends: ["failed", "failed"] },
    reject_always: { asked: 1, ends: ["failed", "failed"] },
    cancelled: { asked: 2, ends: ["failed", "failed"] },
    "prompt-cancelled": { asked: 1, ends: null },
  };
  for (const [want, c] of Object.entries(cases)) {
    const s = await newSession(p);
    answers.set(s, want);
    const r = await p.prompt(s, "read it");
    const asked = p.permissions.filter((q) => q.sessionId === s);
    expect(asked.length === c.asked, `permission (${want}): ${asked.length} permission requests, want ${c.asked}`);
    const ups = p.updates.get(s) ?? [];
    const call = ups.find((u) => u.sessionUpdate === "tool_call");
    if (asked.length >= 1 && call) {
      expect(asked[0].toolCall.toolCallId === call.toolCallId, `permission (${want}): the request names call ${asked[0].toolCall.toolCallId}, the update ${call.toolCallId}`);
    }
    const ends = ups.filter((u) => u.sessionUpdate === "tool_call_update" && (u.status === "completed" || u.status === "failed")).map((u) => u.status);
    if (c.ends) {
      expect(JSON.stringify(ends) === JSON.stringify(c.ends), `permission (${want}): the calls ended ${ends}, want ${c.ends}`);
      expect(r.stopReason === "end_turn", `permission (${want}): stopped ${r.stopReason}, want end_turn`);
    } else {
      expect(r.stopReason === "cancelled", `permission (${want}): stopped ${r.stopReason}, want cancelled`);
    }
    out[want] = { stopReason: r.stopReason, asked: asked.length, calls: ends };
  }
  const exit = await p.close();
  expect(exit.code === 0, `permission: EOF ended pablo with ${JSON.stringify(exit)}: ${p.stderr()}`);
  return out;
};

// zed: the exact command line of the README's Zed settings.
scenarios.zed = async () => {
  const z = start("zed", cfg.zed.command, cfg.zed.args, { cwd: cfg.zed.workspace, env: { ...process.env, ...cfg.zed.env } });
  await initialize(z, { durable: false });
  const s = await newSession(z, cfg.zed.workspace);
  const r = await z.prompt(s, "hello");
  expect(r.stopReason === "end_turn", `zed: stopped ${r.stopReason}`);
  const exit = await z.close();
  expect(exit.code === 0, `zed: EOF ended pablo with ${JSON.stringify(exit)}: ${z.stderr()}`);
  return { stopReason: r.stopReason };
};

// render: what an editor renders. The activated Skills arrive as slash
// commands (available_commands_update) after session/new; an fs.edit's
// tool_call carries the file as a location and the edit as a diff; the
// settled update carries the same location.
scenarios.render = async () => {
  const r = start("render", cfg.bin, cfg.render.args, { cwd: cfg.render.workspace });
  await initialize(r, { durable: false });
  const s = await newSession(r, cfg.render.workspace);
  const cmds = await within("render: available_commands_update", waitForUpdate(r, s, (u) => u.sessionUpdate === "available_commands_update"));
  const names = cmds.availableCommands.map((c) => c.name);
  expect(JSON.stringify(names) === JSON.stringify(cfg.render.commands), `render: commands ${JSON.stringify(names)}, want ${JSON.stringify(cfg.render.commands)}`);
  expect(cmds.availableCommands.every((c) => typeof c.description === "string" && c.description.length > 0), `render: a command without a description: ${JSON.stringify(cmds)}`);
  const res = await r.prompt(s, "/" + names[0] + " fix the greeting");
  expect(res.stopReason === "end_turn", `render: stopped ${res.stopReason}`);
  const ups = r.updates.get(s) ?? [];
  const call = ups.find((u) => u.sessionUpdate === "tool_call" && u.title === "fs.edit");
  const file = cfg.render.workspace + "/" + cfg.render.file;
  if (expect(call, `render: no fs.edit tool_call in ${JSON.stringify(ups).slice(0, 600)}`)) {
    expect(call.kind === "edit", `render: fs.edit's kind is ${call.kind}`);
    expect(JSON.stringify(call.locations) === JSON.stringify([{ path: file }]), `render: fs.edit's locations ${JSON.stringify(call.locations)}, want ${file}`);
    const diff = (call.content ?? []).find((c) => c.type === "diff");
    expect(diff && diff.path === file && diff.oldText === cfg.render.oldText && diff.newText === cfg.render.newText, `render: fs.edit's content ${JSON.stringify(call.content)}`);
    const done = ups.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId && u.status === "completed");
    expect(done, `render: the fs.edit did not complete: ${JSON.stringify(ups).slice(0, 600)}`);
  }
  const exit = await r.close();
  expect(exit.code === 0, `render: EOF ended pablo with ${JSON.stringify(exit)}: ${r.stderr()}`);
  return { commands: names, locations: call?.locations?.length ?? 0 };
};

// clientmcp: the editor's own MCP servers (server-everything over stdio,
// with an environment value of the user's, and server-filesystem on the
// project) run when the deployment opts in: get-env sees the variable, the
// value is masked in every frame, and each call's text reaches the editor
// as content. Without the opt-in, session/new is refused with an error
// that names the key.
scenarios.clientmcp = async () => {
  const c = cfg.clientmcp;
  const server = { name: c.server.name, command: c.server.command, args: c.server.args, env: [{ name: c.envName, value: c.secret }] };
  const files = { name: c.files.name, command: c.files.command, args: c.files.args, env: [] };
  const on = start("clientmcp-on", cfg.bin, c.on, { cwd: c.workspace });
  await initialize(on, { durable: true });
  const s = (await on.request("session/new", { cwd: c.workspace, mcpServers: [server, files] })).sessionId;
  const r = await on.prompt(s, "Which environment does the editor's server see?");
  expect(r.stopReason === "end_turn", `clientmcp: stopped ${r.stopReason}: ${on.stderr()}`);
  const ups = on.updates.get(s) ?? [];
  const call = ups.find((u) => u.sessionUpdate === "tool_call" && u.title === c.capability);
  const done = ups.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call?.toolCallId && u.status === "completed");
  const text = (done?.content ?? []).filter((x) => x.type === "content").map((x) => x.content.text).join("");
  expect(text.includes(c.envName), `clientmcp: get-env's content does not name ${c.envName}: ${JSON.stringify(ups).slice(0, 800)}`);
  const fsCall = ups.find((u) => u.sessionUpdate === "tool_call" && u.title === c.files.capability);
  const fsDone = ups.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === fsCall?.toolCallId && u.status === "completed");
  const fsText = (fsDone?.content ?? []).filter((x) => x.type === "content").map((x) => x.content.text).join("");
  expect(fsText.includes(c.files.text), `clientmcp: server-filesystem's read_text_file gave ${JSON.stringify(fsDone ?? ups).slice(0, 800)}`);
  const leaked = on.frames.filter((f) => JSON.stringify(f).includes(c.secret));
  expect(leaked.length === 0, `clientmcp: the client's value is in ${leaked.length} frames: ${JSON.stringify(leaked).slice(0, 300)}`);
  const exitOn = await on.close();
  expect(exitOn.code === 0, `clientmcp: EOF ended pablo with ${JSON.stringify(exitOn)}: ${on.stderr()}`);

  const off = start("clientmcp-off", cfg.bin, c.off, { cwd: c.workspace });
  await initialize(off, { durable: false });
  let refused = null;
  try {
    await off.request("session/new", { cwd: c.workspace, mcpServers: [server] });
  } catch (err) {
    refused = err;
  }
  const said = refused ? `${refused.message} ${JSON.stringify(refused.data ?? null)}` : "";
  expect(refused && refused.code === -32602 && said.includes("options.interfaces.acp.client_mcp_servers"), `clientmcp: without the opt-in session/new answered ${refused ? `${refused.code} ${said}` : "a session"}`);
  expect(!said.includes(c.secret), "clientmcp: the refusal holds the client's value");
  expect(!off.stderr().includes(c.secret), "clientmcp: pablo's diagnostics hold the client's value");
  const exitOff = await off.close();
  expect(exitOff.code === 0, `clientmcp: EOF ended pablo with ${JSON.stringify(exitOff)}: ${off.stderr()}`);
  return { content: text.length, refused: refused?.code };
};

// elicitation: an MCP server's form (the fault server's ask tool) reaches
// a client that negotiated pablo/elicitation-v1 as _pablo/v1/elicitation,
// and its accept goes back to the server, the form's default filling what
// it left out; a client without the extension is never asked and the
// server gets a decline.
scenarios.elicitation = async () => {
  const c = cfg.elicitation;
  const out = {};
  for (const negotiated of [true, false]) {
    const label = negotiated ? "elicitation-on" : "elicitation-off";
    const asked = [];
    const p = start(label, cfg.bin, c.args, {
      cwd: c.workspace,
      requests: {
        "_pablo/v1/elicitation": (params) => {
          asked.push(params);
          return { action: "accept", content: { target: "production" } };
        },
      },
    });
    const meta = negotiated ? { "pablo/elicitation-v1": true } : {};
    const init = await p.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { _meta: meta } });
    expect((init.agentCapabilities?._meta?.["pablo/elicitation-v1"] === true) === negotiated, `${label}: the agent's echo is ${JSON.stringify(init.agentCapabilities?._meta)}`);
    const s = await newSession(p, c.workspace);
    const r = await p.prompt(s, "Deploy.");
    expect(r.stopReason === "end_turn", `${label}: stopped ${r.stopReason}: ${p.stderr()}`);
    expect(asked.length === (negotiated ? 1 : 0), `${label}: asked ${asked.length} times`);
    if (negotiated && asked.length === 1) {
      const q = asked[0];
      expect(q.sessionId === s && q.server === "records" && q.tool === c.capability && q.message === "Where should the release go?" &&
        q.requestedSchema?.properties?.target?.enum?.join(",") === "staging,production" && q.requestedSchema?.required?.join(",") === "target",
        `${label}: the request is ${JSON.stringify(q)}`);
    }
    const ups = p.updates.get(s) ?? [];
    const done = ups.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
    const text = (done?.content ?? []).filter((x) => x.type === "content").map((x) => x.content.text).join("");
    const want = negotiated ? 'action accept content {"notify":false,"target":"production"}' : "action decline content null";
    expect(text.includes(want), `${label}: the server reported ${JSON.stringify(text || ups).slice(0, 800)}, want ${want}`);
    const exit = await p.close();
    expect(exit.code === 0, `${label}: EOF ended pablo with ${JSON.stringify(exit)}: ${p.stderr()}`);
    out[label] = { asked: asked.length, reported: text.slice(0, 80) };
  }
  return out;
};

// projects: one pablo process serves two sessions in two project
// directories under the deployment's workspace root at once; each
// session's fs.read reads its own project's file, its location names it,
// and session/list by cwd finds each session under its own directory. A
// directory outside every root is refused.
scenarios.projects = async () => {
  const c = cfg.projects;
  const p = start("projects", cfg.bin, c.args, { cwd: c.dirs[0] });
  await initialize(p, { durable: true });
  const ids = await Promise.all(c.dirs.map((d) => newSession(p, d)));
  const answers = await Promise.all(ids.map((s) => p.prompt(s, "Read the notes.")));
  expect(answers.every((a) => a.stopReason === "end_turn"), `projects: stopped ${answers.map((a) => a.stopReason)}`);
  const out = [];
  for (let i = 0; i < ids.length; i++) {
    const ups = p.updates.get(ids[i]) ?? [];
    const call = ups.find((u) => u.sessionUpdate === "tool_call" && u.title === "fs.read");
    const done = ups.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call?.toolCallId && u.status === "completed");
    const file = c.dirs[i] + "/" + c.file;
    expect(JSON.stringify(call?.locations) === JSON.stringify([{ path: file }]), `projects: session ${i} read ${JSON.stringify(call?.locations)}, want ${file}`);
    const raw = JSON.stringify(done?.rawOutput ?? null);
    expect(raw.includes(c.texts[i]) && !raw.includes(c.texts[1 - i]), `projects: session ${i} read ${raw.slice(0, 300)}, want ${c.texts[i]}`);
    const list = await p.request("session/list", { cwd: c.dirs[i] });
    const listed = (list.sessions ?? []).map((x) => x.sessionId);
    expect(JSON.stringify(listed) === JSON.stringify([ids[i]]), `projects: session/list of ${c.dirs[i]} is ${JSON.stringify(listed)}, want ${ids[i]}`);
    out.push(file);
  }
  let refused = null;
  try {
    await newSession(p, c.outside);
  } catch (err) {
    refused = err;
  }
  expect(refused && refused.code === -32602, `projects: a session outside the roots answered ${refused ? refused.code : "a session"}`);
  const exit = await p.close();
  expect(exit.code === 0, `projects: EOF ended pablo with ${JSON.stringify(exit)}: ${p.stderr()}`);
  return { sessions: ids.length };
};

// conversation: three prompts in one session on a fixture provider; the
// Go test reads the provider's requests (the third prompt's first request
// must hold the first two turns as the messages they were).
scenarios.conversation = async () => {
  const c = cfg.conversation;
  const p = start("conversation", cfg.bin, c.args, { cwd: c.workspace });
  await initialize(p, { durable: false });
  const s = await newSession(p, c.workspace);
  const stops = [];
  for (const text of c.prompts) stops.push((await p.prompt(s, text)).stopReason);
  expect(stops.every((x) => x === "end_turn"), `conversation: stopped ${stops}: ${p.stderr()}`);
  const exit = await p.close();
  expect(exit.code === 0, `conversation: EOF ended pablo with ${JSON.stringify(exit)}: ${p.stderr()}`);
  return { prompts: stops.length };
};

// selfcheck proves the checks above fire: each case runs pablo behind a
// wrapper that first writes one bad stdout line, and the problem the case
// wants must be reported. Those problems are then taken back.
scenarios.selfcheck = async () => {
  const out = {};
  for (const [name, c] of Object.entries(cfg.selfcheck)) {
    const before = problems.length;
    const peer = start(`selfcheck-${name}`, c.command, c.args, { cwd: cfg.workspace });
    try {
      await initialize(peer, { durable: false });
      const s = await newSession(peer);
      await peer.prompt(s, "hello");
      await peer.close();
    } catch (err) {
      fail(`selfcheck-${name}: ${err}`);
      peer.child.kill("SIGKILL");
    }
    await new Promise((resolve) => setImmediate(resolve));
    const caught = problems.splice(before);
    out[name] = caught.length;
    if (!caught.some((p) => p.includes(c.want))) {
      fail(`selfcheck ${name}: the check for ${JSON.stringify(c.want)} did not fire; reported: ${JSON.stringify(caught)}`);
    }
  }
  return out;
};

// kind: `pablo acp --kind review` serves sessions of kind review. A session
// naming another kind in _meta["pablo/v2"].kind is refused with invalid
// params; one naming review is offered only the commands of review's Skills
// (and of those for every kind), and its prompt runs.
scenarios.kind = async () => {
  const k = start("kind", cfg.bin, cfg.kind.args, { cwd: cfg.workspace });
  await initialize(k, { durable: false });
  const withKind = (kind) => ({ cwd: cfg.workspace, mcpServers: [], _meta: { "pablo/v2": { kind } } });
  let code;
  try {
    await k.request("session/new", withKind("triage"));
  } catch (err) {
    code = err?.code;
  }
  expect(code === -32602, `kind: a session of another kind than the host's answered ${code}, want -32602`);
  const s = (await k.request("session/new", withKind("review"))).sessionId;
  const u = await within("kind: the session's commands", waitForUpdate(k, s, (u) => u.sessionUpdate === "available_commands_update"));
  const names = (u.availableCommands ?? []).map((c) => c.name).sort().join(",");
  expect(names === cfg.kind.commands, `kind: a review session is offered ${JSON.stringify(names)}, want ${JSON.stringify(cfg.kind.commands)}`);
  const r = await k.prompt(s, "go");
  expect(r.stopReason === "end_turn", `kind: the prompt stopped ${r.stopReason}`);
  await k.close();
  return { commands: names };
};

// isRunning reports whether a process whose command line is exactly
// marker (the cancel scenario's sleep) runs: the command itself, not the sandbox that
// starts it, whose command line holds it too.
async function isRunning(marker) {
  return readdirSync("/proc").some((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ") === marker;
    } catch {
      return false;
    }
  });
}

// processGone resolves once no process whose command line holds marker runs.
function processGone(marker) {
  return new Promise((resolve) => {
    const poll = async () => ((await isRunning(marker)) ? setTimeout(poll, 5) : resolve());
    poll();
  });
}

// processRunning resolves once a process whose command line holds marker
// runs on this host (polling /proc: the command runs in pablo's sandbox).
function processRunning(marker) {
  return new Promise((resolve) => {
    const poll = async () => ((await isRunning(marker)) ? resolve() : setTimeout(poll, 5));
    poll();
  });
}

// waitForUpdate resolves with the first update of the session that
// matches, one already received included.
function waitForUpdate(peer, sessionId, match) {
  return new Promise((resolve) => {
    const had = (peer.updates.get(sessionId) ?? []).find(match);
    if (had) return resolve(had);
    const w = (sid, u) => {
      if (sid === sessionId && match(u)) {
        peer.waiters.delete(w);
        resolve(u);
      }
    };
    peer.waiters.add(w);
  });
}

const results = {};
for (const name of cfg.run) {
  const before = problems.length;
  const t0 = Date.now();
  current = name;
  try {
    results[name] = await scenarios[name]();
  } catch (err) {
    const diag = peers.filter((p) => p.scenario === name).map((p) => `\n  ${p.label} stderr: ${p.stderr().slice(-2000)}`).join("");
    fail(`${name}: ${err?.stack ?? err}${diag}`);
  }
  results[name] = { ...(results[name] ?? {}), ms: Date.now() - t0, problems: problems.length - before };
}
for (const child of children) {
  if (child.exitCode === null && child.signalCode === null) {
    fail(`a pablo process (pid ${child.pid}) was still running at the end`);
    child.kill("SIGKILL");
  }
}
process.stdout.write(JSON.stringify({ ok: problems.length === 0, problems, scenarios: results }) + "\n");
process.exit(problems.length === 0 ? 0 : 1);
