/**
 * Two agent sessions on one intercom, from an Effect program.
 *
 *   npm run build                  # the broker is spawned from dist/
 *   node examples/two-sessions.ts  # Node 24 runs this file as is
 *
 * Each session is an `IntercomSession` over its own `IntercomClient`, with a
 * headless `Host` whose "agent" is a queue of inbound messages. The first
 * operation finds no broker, so the client spawns one (detached) for the
 * private agent dir. The planner asks, the reviewer replies, the planner
 * prints the reply; then both sessions close (unregistering), the broker is
 * stopped, and the agent dir is removed.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Context, Effect, Layer, Queue, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { IntercomClient } from "../src/client/index.ts"
import { type IntercomPaths, intercomPaths } from "../src/config/index.ts"
import { headless, Host, type Inbound, IntercomSession, sessionRegistration } from "../src/session/index.ts"

/**
 * A private agent dir, removed at the end. Real programs use the user's
 * (`loadIntercomSettings()` resolves it from the environment and config.json).
 * Created under `$INTERCOM_EXAMPLE_DIR`, else /tmp: a Unix socket path must
 * stay short, and macOS's `os.tmpdir()` is too long for one.
 */
const privateAgentDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(process.env.INTERCOM_EXAMPLE_DIR ?? "/tmp", "intercom-example-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * Stops the broker this example spawned. Not needed in real use: a broker
 * exits by itself 5 s after its last session leaves; here the agent dir is
 * about to be deleted.
 */
const stopBroker = (paths: IntercomPaths) =>
  Effect.gen(function*() {
    const pid = Number.parseInt(fs.readFileSync(paths.pidFile, "utf8"), 10)
    const alive = () => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    }
    if (!Number.isSafeInteger(pid) || !alive()) return
    process.kill(pid, "SIGTERM")
    yield* Effect.sync(alive).pipe(
      Effect.repeat({ schedule: Schedule.spaced("50 millis"), while: (running) => running }),
      Effect.timeout("5 seconds")
    )
  }).pipe(Effect.ignore)

/** One session: its client, the session runtime, and a headless host that queues what it receives. */
const openSession = (paths: IntercomPaths, name: string) =>
  Effect.gen(function*() {
    const sessionId = randomUUID()
    const identity = { name, cwd: process.cwd(), model: "example-model" }
    const inbox = yield* Queue.unbounded<Inbound>()
    const client = IntercomClient.layer({
      agentDir: paths.agentDir,
      intercomDir: paths.intercomDir,
      socketPath: paths.socketPath,
      sessionId,
      registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: Date.now() }),
      launch: { _tag: "Default" } // spawn `dist/bin/intercom.mjs broker` when none answers
    })
    const host = Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound)))
    // Built in the current Scope: closing it ends the session and unregisters its client.
    const context = yield* Layer.build(IntercomSession.layer().pipe(Layer.provide(Layer.merge(client, host))))
    return { session: Context.get(context, IntercomSession), inbox }
  })

const main = Effect.gen(function*() {
  const paths = intercomPaths(yield* privateAgentDir)
  yield* Effect.addFinalizer(() => stopBroker(paths)) // runs after the sessions below have closed

  const planner = yield* openSession(paths, "planner")
  const reviewer = yield* openSession(paths, "reviewer")
  // Sessions connect lazily; the first operation spawns the broker and registers.
  yield* reviewer.session.status
  yield* Console.log((yield* planner.session.list).text)

  // The reviewer's "agent": take the inbound question as a turn, answer it.
  yield* Effect.forkScoped(Effect.gen(function*() {
    const inbound = yield* Queue.take(reviewer.inbox)
    yield* Console.log(`reviewer received (${inbound.intent}): ${inbound.message.content.text}`)
    yield* reviewer.session.beginTurn({ from: inbound.from.id, messageId: inbound.message.id })
    yield* reviewer.session.reply({ message: "Yes: every retry reuses the message id, so the broker de-duplicates it." })
    yield* reviewer.session.endTurn
  }))

  const answer = yield* planner.session.ask({ to: "reviewer", message: "Is the retry logic safe?", timeoutMs: 10_000 })
  yield* Console.log(answer.text)
})

NodeRuntime.runMain(Effect.scoped(main))
