// A real A2A 1.0 peer for Pablo's tests, on the TypeScript SDK
// (@a2a-js/sdk) with express. It listens on 127.0.0.1 at an ephemeral port
// and prints one JSON line {"base": URL} once it is ready; it exits when
// its stdin closes, so it never outlives the test that started it.
//
// What the agent does is chosen by the first text part of the request:
//   "echo:TEXT"   one artifact with TEXT, then completed
//   "data:JSON"   one artifact with a data part, then completed
//   "slow"        working, then waits for a cancel (canceled) or 30 s
//   "work:MS"     working for MS milliseconds, then one artifact "done
//                 after MS ms" and completed
//   "fail"        failed
//   "input"       input-required
// After the ready line the peer logs one JSON line to stdout for every
// JSON-RPC call it receives ({"log": "rpc", "method": ...}) and for every
// cancel its executor handles ({"log": "cancelTask", "taskId": ...}).
// The environment may set PEER_LEGACY=1: the card then lists a JSONRPC
// 0.3 interface only and the SDK's 0.3 compatibility layer serves it (a
// 0.3 card to a request without an A2A-Version header, the 0.3 JSON-RPC
// methods message/send, message/stream, tasks/get and tasks/cancel).
// The environment may set PEER_BEARER: the card then declares an HTTP
// Bearer scheme "bearer" required of every call, and the RPC endpoint
// refuses a request without that exact token.
import express from "express";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { TaskState } from "@a2a-js/sdk";

const bearer = process.env.PEER_BEARER || "";
const legacy = process.env.PEER_LEGACY === "1";
const app = express();
const server = app.listen(0, "127.0.0.1", () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  card.supportedInterfaces[0].url = `${base}/rpc`;
  process.stdout.write(JSON.stringify({ base }) + "\n");
});

// The card handler serves this object as it is: it is written in the 1.0
// JSON form (the security scheme's oneof as its field name).
const card = {
  name: "pablo-fixture",
  description: "A fixture peer for Pablo's A2A tests",
  version: "1.0.0",
  supportedInterfaces: [{ url: "", protocolBinding: "JSONRPC", tenant: "", protocolVersion: legacy ? "0.3" : "1.0" }],
  provider: undefined,
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: bearer
    ? { bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } } }
    : {},
  securityRequirements: bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain", "application/json"],
  skills: [{ id: "echo", name: "Echo", description: "Echoes its input", tags: ["test"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};

const log = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const cancelled = new Set();
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = ctx.userMessage.parts.find((p) => p.content?.$case === "text")?.content.value ?? "";
    const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
    const update = (state) =>
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(state), metadata: undefined }));
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [], metadata: undefined }));
    update(TaskState.TASK_STATE_WORKING);
    const artifact = (part) =>
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: "result", name: "result", description: "", parts: [part], metadata: undefined, extensions: [] },
      }));
    const part = (content, mediaType) => ({ content, metadata: undefined, filename: "", mediaType });
    if (text.startsWith("echo:")) {
      artifact(part({ $case: "text", value: text.slice(5) }, "text/plain"));
      update(TaskState.TASK_STATE_COMPLETED);
    } else if (text.startsWith("data:")) {
      artifact(part({ $case: "data", value: JSON.parse(text.slice(5)) }, "application/json"));
      update(TaskState.TASK_STATE_COMPLETED);
    } else if (text === "slow") {
      for (let i = 0; i < 600 && !cancelled.has(taskId); i++) await wait(50);
      update(cancelled.has(taskId) ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_COMPLETED);
    } else if (text.startsWith("work:")) {
      const ms = Number(text.slice(5));
      for (let waited = 0; waited < ms && !cancelled.has(taskId); waited += 10) await wait(10);
      if (cancelled.has(taskId)) {
        update(TaskState.TASK_STATE_CANCELED);
      } else {
        artifact(part({ $case: "text", value: `done after ${ms} ms` }, "text/plain"));
        update(TaskState.TASK_STATE_COMPLETED);
      }
    } else if (text === "fail") {
      update(TaskState.TASK_STATE_FAILED);
    } else if (text === "input") {
      update(TaskState.TASK_STATE_INPUT_REQUIRED);
    } else {
      update(TaskState.TASK_STATE_REJECTED);
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    log({ log: "cancelTask", taskId });
    cancelled.add(taskId);
  },
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const legacyCompat = { enabled: legacy };
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler, legacyCompat }));
app.use("/rpc", express.json({ limit: "32mb" }), (req, res, next) => {
  log({ log: "rpc", method: req.body?.method ?? "" });
  if (bearer && req.get("authorization") !== `Bearer ${bearer}`) {
    res.status(401).json({ jsonrpc: "2.0", id: null, error: { code: -31401, message: "unauthenticated" } });
    return;
  }
  next();
});
app.use("/rpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));

process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
