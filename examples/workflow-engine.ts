/**
 * A small workflow engine on `effect-intercom/workflow`.
 *
 *   node examples/workflow-engine.ts   # Node 24 runs this file as is; prints the timeline
 *
 * A supervisor runs a parallel stage of 8 simulated agents (workers) under
 * one run. The real broker core, `IntercomClient` and `IntercomSession` run
 * unchanged over the in-memory network (no socket). What happens:
 *
 * - the engine launches the 8 workers with `Children` (one generated group
 *   for the parallel set, a supervisor capability each) and starts them as
 *   sessions from the environment it got;
 * - the supervisor is busy in a foreground `subagent` call on worker-0;
 * - the background workers send progress updates over the supervisor
 *   channel; the supervisor is busy and keeps messages for its next turn
 *   (`busySteer: "queue"`, Atomic's behaviour), so they wait in its idle
 *   queue;
 * - worker-3 asks for an interview (a blocking question);
 * - worker-0, the foreground child, sends progress: the detach handshake
 *   releases the supervisor's `subagent` call and the update steers the
 *   supervisor at once;
 * - the background workers finish one after the other: each terminal notice
 *   is handed over with the worker's earlier progress right before it, while
 *   the supervisor is still busy (no turn is waited for);
 * - the supervisor goes idle: the interview reaches it in one batch, it
 *   answers, worker-3 gets the answer and finishes, then worker-0, whose
 *   messages after the detach are ordinary ones, handed over before its
 *   terminal.
 *
 * The supervisor's `Host.deliver` is `makeParentSession(...).deliver`: the
 * session runtime keeps de-duplication, reply waiters and retries; the
 * workflow layer decides the order. (Inside this repository the imports are
 * ../src/…; a user of the package imports "effect-intercom/workflow" etc.)
 */
import { Context, Deferred, Effect, Exit, Fiber, Layer, Queue, Scope } from "effect"
import { Broker } from "../src/broker/index.ts"
import { type Dialer, IntercomClient, type IntercomClientOptions, IntercomNotConnected } from "../src/client/index.ts"
import {
  headless,
  Host,
  type HostService,
  type Inbound,
  IntercomSession,
  type IntercomSessionOptions,
  type IntercomSessionService,
  parseSupervisorMessage,
  readChildBridge,
  sessionRegistration
} from "../src/session/index.ts"
import { makeInMemoryNetwork } from "../src/transport/index.ts"
import {
  Children,
  makeParentSession,
  type ParentAgent,
  type ParentEntry,
  Runs,
  type TerminalBatch
} from "../src/workflow/index.ts"

const ADDRESS = "mem://broker"
const RUN = "run-1"
const WORKERS = 8

/** The timeline the example prints: one line per thing that happened, in order. */
const makeTimeline = () => {
  const lines: Array<string> = []
  return { lines, note: (line: string) => Effect.sync(() => void lines.push(line)) }
}

/** "worker-3" for a bridged child's entry (its source, C-ORD-24), else the sender's name. */
const who = (entry: ParentEntry): string =>
  entry.source?.subagentIndex !== undefined ? `worker-${entry.source.subagentIndex}` : entry.senderName ?? entry.senderId

/** What a supervisor entry says, in one line: the child's body, without the channel's run header. */
const what = (entry: ParentEntry): string => {
  const parsed = parseSupervisorMessage(entry.payload.message.content.text)
  if (parsed === undefined) return entry.payload.message.content.text
  return parsed.reason === "interview_request" ? "interview request" : `${parsed.reason === "progress_update" ? "progress" : "question"}: ${parsed.body}`
}

/** A session on the in-memory broker: client, session runtime and host, in a Scope of their own. */
const openSession = (
  dial: Dialer,
  id: string,
  name: string,
  host: (identity: { readonly name: string; readonly cwd: string; readonly model: string }) => HostService,
  client: Partial<IntercomClientOptions> = {},
  options: IntercomSessionOptions = {}
) =>
  Effect.gen(function*() {
    const identity = { name, cwd: "/work/project", model: "example-model" }
    const layer = IntercomSession.layer(options).pipe(
      Layer.provideMerge(Layer.merge(
        IntercomClient.layer({
          agentDir: "/unused",
          intercomDir: "/unused",
          socketPath: ADDRESS,
          sessionId: id,
          registration: sessionRegistration({ sessionId: id, identity, pid: process.pid, startedAt: 0 }),
          launch: false,
          dial,
          ...client
        }),
        Host.layer(host(identity))
      ))
    )
    const context = yield* Layer.build(layer)
    const session = Context.get(context, IntercomSession)
    yield* session.connect
    return { session, client: Context.get(context, IntercomClient) }
  })

/** Runs the engine and returns its timeline. */
export const runWorkflowEngine: Effect.Effect<ReadonlyArray<string>, unknown> = Effect.scoped(Effect.gen(function*() {
  const { lines, note } = makeTimeline()
  const network = yield* makeInMemoryNetwork()
  const broker = yield* Broker.make({ idleExit: null })
  yield* network.listen(ADDRESS, broker.accept)
  const dial: Dialer = (address) =>
    network.dial(address).pipe(Effect.mapError((error) => new IntercomNotConnected({ reason: error.message })))

  // ---- The supervisor: a simulated agent behind the workflow's parent session ----
  const supervisorState = { busy: true }
  const answers = yield* Queue.unbounded<ParentEntry>()
  const agent: ParentAgent<string> = {
    isIdle: Effect.sync(() => !supervisorState.busy),
    deliverBatch: (batch) =>
      Effect.gen(function*() {
        supervisorState.busy = true
        yield* note(`supervisor turn with ${batch.length} message(s): ${batch.map((e) => `${who(e)} ${what(e)}`).join("; ")}`)
        for (const entry of batch) if (entry.expectsReply) yield* Queue.offer(answers, entry)
      }),
    surface: (entry) => note(`supervisor steered by ${who(entry)} ${what(entry)}`),
    passive: (entry) => note(`supervisor records ${who(entry)} ${what(entry)} (no turn)`),
    dispatchTerminal: (batch: TerminalBatch<ParentEntry["payload"], string>) =>
      Effect.gen(function*() {
        for (const entry of batch.prelude) yield* note(`supervisor ← ${who(entry)} ${what(entry)}`)
        yield* note(`supervisor ← ${batch.terminal.notice}`)
      })
  }
  // The handshake runs in process; 500 ms per phase (instead of 50) keeps a loaded machine from reading a slow
  // acknowledgement as "unclaimed" (which would still lose nothing: the message would wait in the idle queue).
  // `busySteer: "queue"`: like Atomic, a busy supervisor keeps even `steer` messages for its next turn, so a
  // worker's progress waits in the idle queue and travels with that worker's terminal notice.
  const parent = yield* makeParentSession(agent, {
    generation: "supervisor-1",
    handshake: { ackTimeout: "500 millis" },
    busySteer: "queue"
  })
  const arrivals = yield* Queue.unbounded<Inbound>()
  const supervisor = yield* openSession(
    dial,
    "00000000-0000-4000-8000-000000000001",
    "supervisor",
    (identity) => headless(identity, (inbound) => Effect.andThen(parent.deliver(inbound), Queue.offer(arrivals, inbound))),
    { ownerToken: "example-owner-token-0123456789" }
  )
  /** Waits until the supervisor's runtime handed the next message to the workflow layer (a barrier, not a sleep). */
  const arrived = Effect.asVoid(Queue.take(arrivals))

  // ---- The run and its 8 workers ----
  const services = yield* Layer.build(
    Children.layerWithClient().pipe(
      Layer.provideMerge(Runs.layer()),
      Layer.provide(Layer.succeed(IntercomClient, supervisor.client))
    )
  )
  const runs = Context.get(services, Runs)
  const children = Context.get(services, Children)
  yield* runs.start({ runId: RUN })
  const workers: Array<{ readonly id: string; readonly name: string; readonly session: IntercomSessionService }> = []
  const groups = new Set<string | undefined>()
  for (let index = 0; index < WORKERS; index++) {
    const launched = yield* children.launch({ runId: RUN, agent: "worker", index, parallelSetId: "fanout", group: "auto" })
    const bridge = readChildBridge(launched.env)
    const id = `00000000-0000-4000-8000-00000000010${index}`
    const { session } = yield* openSession(
      dial,
      id,
      launched.sessionName,
      (identity) => headless(identity, () => Effect.void),
      { group: launched.group, supervisorGrant: bridge?.grant },
      { childBridge: bridge }
    )
    groups.add(launched.group)
    workers.push({ id, name: launched.sessionName, session })
  }
  yield* note(`launched ${WORKERS} workers (${workers[0]?.name} … ${workers[WORKERS - 1]?.name}), sharing ${groups.size} generated group`)

  const contact = (index: number, params: Parameters<NonNullable<IntercomSessionService["contactSupervisor"]>>[0]) =>
    Effect.gen(function*() {
      const tool = workers[index]?.session.contactSupervisor
      if (tool === undefined) return yield* Effect.die(`worker-${index} has no contact_supervisor`)
      const result = yield* tool(params)
      if (result.isError) return yield* Effect.die(`worker-${index}: ${result.text}`)
      return result
    })
  const progress = (index: number, message: string) =>
    Effect.andThen(note(`worker-${index} → supervisor: progress "${message}"`), contact(index, { reason: "progress_update", message }))
  const finish = (index: number) =>
    Effect.gen(function*() {
      const worker = workers[index]
      if (worker === undefined) return
      const outcome = yield* parent.terminal({
        owner: "supervisor",
        runId: RUN,
        requestId: `completion-${RUN}-${index}`,
        source: worker.name,
        terminalAt: yield* Effect.clockWith((clock) => clock.currentTimeMillis),
        status: "completed",
        child: { ids: [worker.id], names: [worker.name] },
        notice: `worker-${index} completed`
      })
      if (outcome._tag !== "Admitted") return yield* Effect.die(`worker-${index}'s terminal was not admitted`)
    })

  // ---- The script ----
  // The supervisor's foreground `subagent` call waits on worker-0 until it returns or the child detaches.
  const callReturned = yield* Deferred.make<void>()
  const callScope = yield* Scope.make()
  yield* parent.foreground.attach({
    targets: [workers[0]?.name ?? "", workers[0]?.id ?? ""],
    release: Effect.andThen(note("worker-0 detached: the supervisor's subagent call returns"), Deferred.succeed(callReturned, undefined))
  }).pipe(Scope.provide(callScope))
  yield* note("supervisor busy: foreground subagent call on worker-0")

  for (const index of [1, 2, 4, 5, 6, 7, 3]) {
    yield* progress(index, `worker-${index} halfway`)
    yield* arrived
  }
  yield* note("worker-3 → supervisor: interview request (waits for the answer)")
  const interview = yield* Effect.forkChild(contact(3, {
    reason: "interview_request",
    interview: { title: "API choice", questions: [{ id: "api", type: "single", question: "Which API?", options: ["stable", "experimental"] }] }
  }))
  yield* arrived

  // The foreground child's message: probe → commit → detach, then it steers the busy supervisor.
  yield* progress(0, "found the cause; continuing in the background")
  yield* arrived
  yield* Deferred.await(callReturned)
  yield* Scope.close(callScope, Exit.void)

  // Background workers finish in this order; each terminal follows that worker's earlier messages.
  for (const index of [1, 2, 4, 5, 6, 7]) yield* finish(index)

  // The supervisor's turn ends: the queue (the interview) flushes as one batch.
  supervisorState.busy = false
  yield* parent.idle
  const question = yield* Queue.take(answers)
  yield* note(`supervisor answers ${who(question)}'s interview`)
  yield* supervisor.session.intercom({ action: "reply", to: question.senderId, message: "```json\n{\"responses\":[{\"id\":\"api\",\"value\":\"stable\"}]}\n```" })
  const answered = yield* Fiber.await(interview)
  if (answered._tag !== "Success") return yield* Effect.die("worker-3's interview failed")
  yield* note(`worker-3 got the answer: ${answered.value.text.includes("stable") ? "stable" : answered.value.text}`)
  supervisorState.busy = true

  yield* progress(3, "worker-3 done with the stable API")
  yield* arrived
  // worker-0 detached: its later messages are ordinary ones, handed over before its terminal.
  yield* progress(0, "fix ready")
  yield* arrived
  yield* finish(3)
  yield* finish(0)
  yield* runs.end(RUN)
  yield* note("run ended")
  return lines
}))

if (import.meta.main === true) {
  Effect.runPromise(runWorkflowEngine).then(
    (lines) => {
      lines.forEach((line, index) => console.log(`${String(index + 1).padStart(2)}. ${line}`))
    },
    (error: unknown) => {
      console.error(error)
      process.exit(1)
    }
  )
}
