// acpmeasure.mjs takes the reference's ACP figures of `pablo acp --stdio`
// with the official ACP TypeScript client SDK (@agentclientprotocol/sdk,
// stable v1), one sample per command, for BenchmarkReferenceACP
// (reference_bench_test.go), which serves the loopback model.
//
// Usage: node acpmeasure.mjs CONFIG_JSON, the config naming the SDK entry,
// the pablo binary and its arguments, the workspace, the final text every
// prompt must stream and the warm-process bounds. It then reads one command
// a line from stdin and answers each with one JSON line on stdout:
//
//   fresh  a new process: initialize (timed), 50 ms, `ps -o rss=` of the
//          process (KiB), a new session, one prompt (timed), EOF and a
//          clean exit → {"initialize_ms", "idle_rss_kib", "prompt_ms"}
//   warm   one prompt in a new session of a process kept across commands,
//          warmed by cfg.warmups tasks and replaced after cfg.sessions
//          sessions → {"warm_prompt_ms"}
//   end    closes the warm process and exits → {"ok": true}
//
// Every answer says how many tasks (prompts) the command ran, warm-ups
// included ("tasks"), so the caller checks its provider's request count.
// Every answer carries "problems": a stop reason other than end_turn, a
// streamed text other than cfg.text, a tool call that did not complete,
// an SDK console.error or console.warn, or an unclean exit.
import { execFile, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { inspect, promisify } from "node:util";

const cfg = JSON.parse(process.argv[2]);
const acp = await import(pathToFileURL(cfg.sdk).href);
const run = promisify(execFile);

let problems = [];
const fail = (msg) => problems.push(msg);
for (const level of ["error", "warn"]) {
  console[level] = (...args) => fail(`the SDK logged console.${level}: ${args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 4 }))).join(" ")}`);
}
process.on("unhandledRejection", (err) => fail(`unhandled rejection: ${err?.stack ?? err}`));

// start runs one pablo process and connects the SDK's client to it.
function start() {
  const child = spawn(cfg.bin, cfg.args, { stdio: ["pipe", "pipe", "pipe"], cwd: cfg.workspace });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => {
    if (stderr.length < 65536) stderr += d;
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const updates = new Map(); // sessionId → [update]
  const conn = acp
    .client()
    .onNotification("session/update", ({ params }) => {
      if (!updates.has(params.sessionId)) updates.set(params.sessionId, []);
      updates.get(params.sessionId).push(params.update);
    })
    .onRequest("session/request_permission", async ({ params }) => {
      fail(`an unexpected permission request for ${params.toolCall?.toolCallId}`);
      return { outcome: { outcome: "cancelled" } };
    })
    .connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  return {
    child,
    exited,
    stderr: () => stderr,
    request: (method, params) => conn.agent.request(method, params),
    async close() {
      child.stdin.end();
      const r = await exited;
      conn.close();
      if (r.code !== 0) fail(`pablo exited ${JSON.stringify(r)} after EOF: ${stderr.slice(-2000)}`);
    },
    // task runs one prompt in a new session (not timed) and checks it;
    // it returns the prompt's milliseconds.
    async task() {
      const { sessionId } = await conn.agent.request("session/new", { cwd: cfg.workspace, mcpServers: [] });
      const t0 = performance.now();
      const r = await conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Run the measurement command." }] });
      const ms = performance.now() - t0;
      const seen = updates.get(sessionId) ?? [];
      updates.delete(sessionId);
      const text = seen
        .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
        .map((u) => u.content.text)
        .join("");
      if (r?.stopReason !== "end_turn") fail(`the prompt stopped ${JSON.stringify(r?.stopReason)}, want end_turn: ${stderr.slice(-2000)}`);
      if (text !== cfg.text) fail(`the prompt streamed ${JSON.stringify(text.slice(0, 200))}, want the ${cfg.text.length} bytes of the fixture`);
      if (!seen.some((u) => (u.sessionUpdate === "tool_call_update" || u.sessionUpdate === "tool_call") && u.status === "completed")) {
        fail(`the prompt's shell.run did not complete: ${JSON.stringify(seen.filter((u) => u.sessionUpdate.startsWith("tool_call"))).slice(0, 600)}`);
      }
      return ms;
    },
  };
}

async function initialize(p) {
  const t0 = performance.now();
  const init = await p.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const ms = performance.now() - t0;
  if (init.protocolVersion !== 1) fail(`initialize chose protocol ${init.protocolVersion}, want 1`);
  return ms;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function fresh() {
  const p = start();
  const initialize_ms = await initialize(p);
  await sleep(50);
  const { stdout } = await run("ps", ["-o", "rss=", "-p", String(p.child.pid)]);
  const idle_rss_kib = Number(stdout.trim());
  if (!(idle_rss_kib > 0)) fail(`ps -o rss= printed ${JSON.stringify(stdout)}`);
  const prompt_ms = await p.task();
  await p.close();
  return { initialize_ms, idle_rss_kib, prompt_ms, tasks: 1 };
}

let warmProcess = null;
let warmSessions = 0;

async function warm() {
  let tasks = 1;
  if (warmProcess === null || warmSessions >= cfg.sessions) {
    if (warmProcess !== null) await warmProcess.close();
    warmProcess = start();
    await initialize(warmProcess);
    for (let i = 0; i < cfg.warmups; i++) await warmProcess.task();
    tasks += cfg.warmups;
    warmSessions = 0;
  }
  warmSessions++;
  return { warm_prompt_ms: await warmProcess.task(), tasks };
}

const commands = {
  fresh,
  warm,
  async end() {
    if (warmProcess !== null) await warmProcess.close();
    return { ok: true, tasks: 0 };
  },
};

for await (const line of createInterface({ input: process.stdin })) {
  const command = commands[line.trim()];
  let answer;
  try {
    answer = command ? await command() : {};
    if (!command) fail(`unknown command ${JSON.stringify(line)}`);
  } catch (err) {
    fail(`${line}: ${err?.stack ?? err}`);
    answer = {};
  }
  process.stdout.write(JSON.stringify({ ...answer, problems }) + "\n");
  problems = [];
  if (line.trim() === "end") break;
}
process.exit(0);
