/**
 * `IntercomSession`: the host-independent runtime of one agent session on the
 * bus — the `intercom` tool actions (list/send/ask/reply/pending/status), the
 * single reply-waiter slot, the reply tracker, inbound admission and
 * de-duplication, delivery intents and lifecycle presence.
 *
 * This module holds the wiring (the public types are in `models.ts`, re-exported
 * here); each concern is its own
 * module, built over the generation's shared record (`Generation.ts`):
 *
 * | module | owns |
 * |---|---|
 * | `PresencePublisher.ts` | identity, lifecycle status, the presence fiber |
 * | `Sending.ts` | the outgoing path: targets, exact send, re-list after a rebound |
 * | `Actions.ts` | list / send / reply / pending / status |
 * | `Ask.ts` | the blocking ask that holds the reply-waiter slot |
 * | `SupervisorContact.ts` | a delegated child's `contact_supervisor`, sharing that slot |
 * | `Inbound.ts` | the message, membership and control fibers (the control rules: `InboundControls.ts`) |
 * | `InboundJournal.ts` | checkpoint, restore and Esc-clear redelivery with a host journal |
 * | `ToolExposure.ts` | lazy exposure of the tool (`load_intercom`) |
 * | `IntercomTool.ts` | `intercom(params)`: check once, act, render |
 * | `groups.ts` | the tool's read-only `group` parameter: peek, counts, the send lock |
 * | `Topics.ts`, `TopicBoard.ts` | topics (`topics-v1`): the four actions, received records, the host's topic store |
 * | `Results.ts` | the result archive (`results-v1`): the `results` and `result` actions |
 * | `WorkerActions.ts` | supervised workers over the host's `Workers` port: `peek`, `steer`, worker `stop` and `result` |
 *
 * One layer build is one session generation (C-ORD-35): every fiber is forked
 * in the layer's Scope, and closing it ends a wait in progress and interrupts
 * them, so nothing started by an old generation can act afterwards.
 *
 * The session is the single consumer of `IntercomClient.messages`.
 */
import { Clock, Context, Effect, Layer, type Scope } from "effect"
import { IntercomClient } from "../client/IntercomClient.ts"
import { makeActions } from "./Actions.ts"
import { makeAsking } from "./Ask.ts"
import { makeGeneration, resolveSettings } from "./Generation.ts"
import { withGroups } from "./groups.ts"
import { Host } from "./Host.ts"
import { runInbound } from "./Inbound.ts"
import { baseToolActions, makeIntercomTool } from "./IntercomTool.ts"
import type { IntercomSessionOptions, IntercomSessionService } from "./models.ts"
import { makePresencePublisher } from "./PresencePublisher.ts"
import { makeReplyTracker } from "./ReplyTracker.ts"
import { makeResultActions } from "./Results.ts"
import { makeSending } from "./Sending.ts"
import { hasSupervisorGrant, makeSupervisorContact } from "./SupervisorContact.ts"
import { makeToolExposure } from "./ToolExposure.ts"
import { makeTopics } from "./Topics.ts"
import { makeQuestionToolActions } from "./QuestionActions.ts"
import { makeWorkerToolActions } from "./WorkerActions.ts"

export { DEFAULT_ASK_TIMEOUT_MS } from "./Generation.ts"
export { type GroupPeek, groupParam, peekGroup, withGroups } from "./groups.ts"
export { inScope, isListScope, type ListScope, projectKey } from "./project.ts"
export { TOOL_LOADED, type ToolVisibility } from "./ToolExposure.ts"
export { sessionRegistration } from "./PresencePublisher.ts"
/** The options, requests, results and the service interface live in `models.ts`. */
export type * from "./models.ts"
/** The failure types moved to `errors.ts`; re-exported for existing importers. */
export type {
  AskFailure,
  ClientFailure,
  IntercomSessionError,
  ListError,
  ReplyFailure,
  SendFailure
} from "./errors.ts"

// ---------------------------------------------------------------------------
// The wiring
// ---------------------------------------------------------------------------

const make = (
  options: IntercomSessionOptions = {}
): Effect.Effect<IntercomSessionService, never, IntercomClient | Host | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* IntercomClient
    const host = yield* Host
    const settings = resolveSettings(options)
    const tracker = makeReplyTracker(settings.askTimeoutMs)
    const presence = yield* makePresencePublisher({
      client,
      identity: host.identity,
      statusSuffix: settings.statusSuffix,
      pendingAsks: (now) => tracker.pending(now).length,
      nextAskExpiry: (now) => tracker.nextExpiry(now)
    })
    const generation = yield* makeGeneration({
      client,
      host,
      settings,
      afterConnect: presence.refresh,
      noteActivity: presence.noteActivity,
      pendingChanged: presence.markDirty,
      tracker
    })
    const sending = makeSending(generation)
    const actions = makeActions(generation, sending)
    const asking = makeAsking(generation, sending)
    const exposure = makeToolExposure(options.toolVisibility ?? "always", host)
    const inbound = yield* runInbound(generation, presence.lifecycle, exposure)
    const topics = yield* makeTopics(generation, presence.lifecycle, exposure)
    const questions = yield* makeQuestionToolActions(client)
    const results = makeResultActions(generation)
    const workers = yield* makeWorkerToolActions(new Map([...results, ...questions]))
    const tool = makeIntercomTool(
      new Map([
        ...withGroups(new Map([...baseToolActions(actions, asking, options.defaultScope), ...topics.actions]), generation),
        ...results,
        ...questions,
        ...workers
      ])
    )
    const defaultScope = options.defaultScope ?? "all"
    const bridge = options.childBridge
    const supervisorContact = hasSupervisorGrant(bridge) ? makeSupervisorContact(generation, sending, bridge) : undefined
    // Added last, so it runs first when the (sequential) Scope closes
    // (C-ORD-35): a wait in progress ends before the fibers above are interrupted.
    // The client stops confirming first: mail read from here on reaches no generation of this one, and
    // stays the broker's until the next generation resumes confirming (known issue 9).
    yield* Effect.addFinalizer(() => Effect.andThen(client.holdConfirmations, generation.retire))
    // What is confirmed is what this runtime checkpointed and handed on (`handled`), not what was read:
    // a message whose checkpoint a stop cut short stays the broker's (known issue 21).
    yield* client.confirmWhenHandled
    yield* client.resumeConfirmations

    const { slot } = generation
    return {
      sessionId: generation.selfId,
      connect: generation.connect,
      list: actions.listIn(defaultScope),
      send: actions.send,
      ask: asking.ask,
      reply: actions.reply,
      pending: actions.pending,
      status: actions.statusIn(defaultScope),
      // Using the tool is its first use (C-TOOL-15).
      intercom: (params) => Effect.andThen(exposure.expose, tool(params)),
      act: tool,
      // A run that settles (busy → idle) may have left steered or follow-up messages unseen (C-DLV-16).
      setStatus: (status) =>
        Effect.suspend(() => {
          const wasBusy = presence.lifecycle() !== "idle"
          const set = presence.setStatus(status)
          return wasBusy && status === "idle" ? Effect.andThen(set, inbound.settled) : set
        }),
      setIdentity: presence.setIdentity,
      beginTurn: (message) => Effect.map(Clock.currentTimeMillis, (now) => tracker.beginTurn(message, now)),
      endTurn: Effect.sync(() => tracker.endTurn()),
      waiting: Effect.sync(() => slot.current() !== undefined),
      pendingCount: Effect.map(Clock.currentTimeMillis, (now) => tracker.pending(now).length),
      loadTool: exposure.load,
      toolExposed: Effect.sync(exposure.exposed),
      contactSupervisor: supervisorContact?.contact
    } satisfies IntercomSessionService
  })

/**
 * The session runtime service. One build is one session generation:
 * `IntercomSession.make` builds it in the current Scope (closing the Scope
 * ends the generation), `IntercomSession.layer` as a Layer. Both need an
 * `IntercomClient` and a `Host`.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { randomUUID } from "node:crypto"
 * import { IntercomClient } from "effect-intercom/client"
 * import { intercomPaths } from "effect-intercom/config"
 * import { headless, Host, IntercomSession, sessionRegistration } from "effect-intercom/session"
 *
 * const paths = intercomPaths("/home/me/.pi/agent")
 * const sessionId = randomUUID()
 * const identity = { name: "planner", cwd: process.cwd(), model: "my-model" }
 * const client = IntercomClient.layer({
 *   agentDir: paths.agentDir,
 *   intercomDir: paths.intercomDir,
 *   socketPath: paths.socketPath,
 *   sessionId,
 *   registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: 0 }),
 *   launch: { _tag: "Default" }
 * })
 * const host = Host.layer(headless(identity, (inbound) => Effect.log(inbound.text)))
 * const session = IntercomSession.layer({ askTimeoutMs: 60_000 }).pipe(Layer.provide(Layer.merge(client, host)))
 *
 * const program = Effect.gen(function*() {
 *   const intercom = yield* IntercomSession
 *   const sent = yield* intercom.send({ to: "reviewer", message: "PR #12 is ready" })
 *   yield* Effect.log(sent.text) // Message sent to reviewer
 * })
 *
 * program.pipe(Effect.provide(session), Effect.runPromise)
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class IntercomSession extends Context.Service<IntercomSession, IntercomSessionService>()(
  "effect-intercom/session/IntercomSession"
) {
  /** Builds a session generation in the current Scope; closing the Scope ends it. */
  static readonly make: (
    options?: IntercomSessionOptions
  ) => Effect.Effect<IntercomSessionService, never, IntercomClient | Host | Scope.Scope> = make
  /** A new generation per build; requires the client and the host. */
  static readonly layer = (
    options: IntercomSessionOptions = {}
  ): Layer.Layer<IntercomSession, never, IntercomClient | Host> => Layer.effect(IntercomSession, make(options))
}
