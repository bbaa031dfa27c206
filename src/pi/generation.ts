/**
 * Size: one concept — one generation's life, about 555 lines: building its
 * runtime and layers, feeding pi's events to it, and closing it. What could
 * stand alone already does (the backlog of pi's events, lifecycleBacklog.ts;
 * the status line's text and warnings, statusLine.ts; the pi host, host.ts;
 * the messages waiting in pi's queue and their withdrawals, queuedInbound.ts;
 * the client instance, instance.ts);
 * the rest shares the generation's `PiAccess` and its close, so a split
 * would pass those between modules.
 *
 * One pi session generation: everything the extension runs between a
 * `session_start` and its `session_shutdown` (C-ORD-35). It owns a
 * `ManagedRuntime` whose Scope holds the `IntercomClient`, the
 * `IntercomSession` over the pi `Host`, the lifecycle fiber and the status
 * line; `close` disposes it, for every shutdown reason (and once pi says the
 * session is stale without a shutdown: `orphanWatch`), so nothing of an old
 * generation acts afterwards. Its `PiAccess` refuses pi calls from the moment
 * `close` starts (but for `touchWhileClosing`, until the runtime is disposed:
 * the topic state a finalizer saves), and catches pi's stale-context throw.
 *
 * Lifecycle events from pi (status, rename, model switch, turns) are offered
 * to one queue and applied in order by one fiber, so a burst of pi events
 * cannot reorder; before that fiber runs (the runtime is built on first use,
 * or never when intercom is off) they are folded into what they amount to
 * (lifecycleBacklog.ts). The intercom session id is pi's session id.
 *
 * Until pi has written the session file, the checkpoints of received
 * messages (journal.ts) live in pi's memory only, so the generation's
 * client withholds its confirmations (`received-v1`) and the broker keeps
 * that mail; the lifecycle fiber releases them once the file exists
 * (`checkpointsDurable`). A session in memory (`--no-session`) has no file
 * to wait for and confirms what it handled, as it goes. What is withheld is
 * bounded (`unsavedMessageLimit`, the client's `withholdLimit`): with a UI,
 * the footer shows how many messages wait, a warning comes at half the limit,
 * and another when the limit made the client confirm them anyway
 * (statusLine.ts decides what the footer and the warnings say).
 *
 * The client registers as the instance the session file's journal names,
 * unless a live generation holds it (instance.ts: the lock is held in this
 * runtime's Scope, taken before the client is built, so let go after it left);
 * then that generation restored the journal's undelivered messages, and this
 * one hands over only those it checkpoints itself (and warns, with a UI).
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { NodeServices } from "@effect/platform-node"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Telemetry from "../observability/Telemetry.ts"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import { IntercomNotConnected } from "../client/errors.ts"
import { IntercomClient } from "../client/IntercomClient.ts"
import { readIntercomSettings } from "../config/load.ts"
import type { IntercomSettings } from "../config/settings.ts"
import { Host, type HostIdentity } from "../session/Host.ts"
import {
  IntercomSession,
  type IntercomSessionService,
  type IntercomToolParams,
  sessionRegistration,
  type ToolResult
} from "../session/IntercomSession.ts"
import type { ContactSupervisorParams } from "../session/contactSupervisor.ts"
import { childSessionName } from "../session/supervisorBridge.ts"
import { authorizeChild } from "../session/SupervisorLaunch.ts"
import type { GrantedChildBridge } from "../session/SupervisorContact.ts"
import type { ToolVisibility } from "../session/ToolExposure.ts"
import type { AuthorizeChildRequest, AuthorizeChildResult } from "./authorize.ts"
import { makePiHost, type PiAccess, StaleSession } from "./host.ts"
import { claimInstance, liveInstances } from "./instance.ts"
import { checkpointsDurable, type EntryView, inheritedInstance, undeliveredIn, undeliveredInstances } from "./journal.ts"
import { type LifecycleEvent, LifecycleBacklog } from "./lifecycleBacklog.ts"
import type { QueuedInbound } from "./queuedInbound.ts"
import { STATUS_KEY } from "./names.ts"
import {
  leftToOtherNotice,
  statusText,
  TAKE_BACK_HINT,
  takenOverNotice,
  unsavedText,
  UnsavedWarnings
} from "./statusLine.ts"

export type { LifecycleEvent } from "./lifecycleBacklog.ts"

/**
 * What a generation needs to know of its pi session when it starts.
 *
 * @category models
 * @since 0.1.0
 */
export interface GenerationSeed {
  /** pi's session id: the intercom session id. */
  readonly sessionId: string
  readonly name: string | undefined
  readonly cwd: string
  readonly model: string
  readonly hasUI: boolean
  readonly mode: ExtensionContext["mode"]
  /** The session's entries show it used intercom before (`usedIntercom`): it joins the bus at once, whatever the tool's visibility. */
  readonly usedIntercom: boolean
  /** pi's session file (`getSessionFile()`), which may not exist yet; undefined in memory (`--no-session`). */
  readonly sessionFile: string | undefined
}

/**
 * A running generation, as the extension's pi callbacks reach it.
 *
 * @category models
 * @since 0.1.0
 */
export interface PiGeneration {
  /** The intercom session id: pi's session id. */
  readonly sessionId: string
  /** Settles once the session is on the bus (or failed to get there) and restored its journal. */
  readonly ready: Promise<void>
  /**
   * The whole `intercom` tool in one call; never rejects (C-TOOL-12). `ui`: a
   * call from the extension's own UI, which does not expose a lazy tool.
   */
  readonly tool: (params: IntercomToolParams, signal?: AbortSignal, ui?: boolean) => Promise<ToolResult>
  /** `load_intercom({})` (C-TOOL-15). */
  readonly loadTool: () => Promise<ToolResult>
  /** `contact_supervisor` of a delegated child (C-SUP); an error result elsewhere. Never rejects. */
  readonly contactSupervisor: (params: ContactSupervisorParams, signal?: AbortSignal) => Promise<ToolResult>
  /**
   * C-SUP-7: asks the broker for a capability bound to a child's name (as this
   * session's supervisor, with its owner token) and answers the environment to
   * start the child with. Never rejects.
   */
  readonly authorizeChild: (request: Pick<AuthorizeChildRequest, "launch" | "base">) => Promise<AuthorizeChildResult>
  /** Queues a lifecycle change; ignored once the generation closed. */
  readonly lifecycle: (event: LifecycleEvent) => void
  /**
   * Resolves once the lifecycle changes queued so far are applied (at most
   * `APPLIED_WAIT`; at once when the generation closed). Never rejects.
   */
  readonly applied: () => Promise<void>
  /** The newest context pi gave this generation's handlers. */
  readonly observe: (ctx: ExtensionContext) => void
  /** Ends the generation: idempotent; pi is never touched again. */
  readonly close: () => Promise<void>
}

/** How long pi's `agent_settled` waits for the lifecycle to be applied (a closing generation drops it). */
const APPLIED_WAIT = "2 seconds"

/**
 * How often a built generation asks pi whether its session still exists
 * (`orphanWatch`): under the client's first reconnect delay (1 s), so a
 * session pi dropped without `session_shutdown` closes before its client
 * would reconnect after a drop.
 */
const ORPHAN_CHECK = "500 millis"

/** `enabled: false` in config.json: the session never connects (C-CFG-6). */
const disabled = (settings: IntercomSettings) =>
  new IntercomNotConnected({
    reason: `intercom is disabled ("enabled": false in ${settings.configSource ?? settings.paths.configFile})`
  })

const errorResult = (text: string): ToolResult => ({ text, isError: true, details: { error: "IntercomNotConnected" } })

/** Why the generation could not be built, as a tool error. */
const buildFailure = (error: unknown): ToolResult =>
  errorResult(
    error instanceof IntercomNotConnected
      ? error.message
      : `Intercom not connected: ${error instanceof Error ? error.message : String(error)}`
  )

const cancelled: ToolResult = { text: "Cancelled", isError: true, details: { error: "Cancelled" } }

/**
 * Starts the generation of pi session `ctx` (nothing connects here unless
 * `connectNow`; the runtime builds on first use).
 *
 * @category constructors
 * @since 0.1.0
 */
export const startGeneration = (input: {
  readonly pi: ExtensionAPI
  readonly ctx: ExtensionContext
  /** What the generation needs of `ctx`, read by `session_start` itself while `ctx` was surely live. */
  readonly seed: GenerationSeed
  /** From the factory's reading of config.json, so the registered tools and the runtime agree. */
  readonly toolVisibility: ToolVisibility
  /**
   * A delegated child's bridge with its grant, from the factory's reading of
   * the environment (so `contact_supervisor` is registered exactly when the
   * runtime has it). The session registers under the child's name, bound to
   * the grant, and keeps that name whatever pi's session is called (C-SUP-9).
   */
  readonly childBridge?: GrantedChildBridge | undefined
  /**
   * The session runtime's messages handed to pi with a turn, until they enter the model's context, and their
   * withdrawals (queuedInbound.ts): the factory call's, shared by its generations, read by its `message_end`.
   */
  readonly queued: QueuedInbound
}): PiGeneration => {
  const { pi, seed } = input
  let ctx = input.ctx
  let closed = false
  let closing: Promise<void> | undefined
  const { hasUI, sessionId } = seed
  const interactive = seed.mode === "tui" || seed.mode === "rpc"

  /** The close finished (the runtime is disposed): not even `touchWhileClosing` reaches pi. */
  let disposed = false
  const touchIf = <A>(allowed: () => boolean, f: (pi: ExtensionAPI, ctx: ExtensionContext) => A) =>
    Effect.suspend(() => {
      if (!allowed()) return Effect.fail(new StaleSession("the pi session of this intercom generation has ended"))
      try {
        return Effect.succeed(f(pi, ctx))
      } catch (error) {
        return Effect.fail(new StaleSession(error instanceof Error ? error.message : String(error)))
      }
    })
  const access: PiAccess = {
    touch: (f) => touchIf(() => !closed, f),
    touchWhileClosing: (f) => touchIf(() => !disposed, f)
  }
  /** pi still has this generation's session: asking it something does not throw (a stale context does). */
  const sessionLive = access.touch((p) => p.getSessionName())

  const child = input.childBridge
  const identity: HostIdentity = {
    name: child === undefined ? seed.name : childSessionName(child),
    cwd: seed.cwd,
    model: seed.model
  }
  const { queued } = input
  const events = Effect.runSync(Queue.unbounded<LifecycleEvent>())
  /** A message was handed to pi since the status fiber last looked (one signal stands for any number). */
  const delivered = Effect.runSync(Queue.sliding<true>(1))
  /** pi's events until the lifecycle fiber runs (lifecycleBacklog.ts), then its queue's. */
  const backlog = new LifecycleBacklog((event) => Queue.offerUnsafe(events, event))
  /**
   * This generation's private owner token (C-SUP-8): every pi session can be a
   * supervisor. In memory only, never logged or persisted; a new generation
   * has a new one, so its predecessor's capabilities do not carry over.
   */
  const ownerToken = randomBytes(32).toString("base64url")

  const layer = Layer.unwrap(Effect.gen(function*() {
    const { errors, settings, warnings } = yield* readIntercomSettings()
    const problems = [...warnings, ...errors.map((error) => error.message)]
    if (problems.length > 0 && hasUI) {
      yield* access.touch((_pi, c) => c.ui.notify(problems.join("\n"), "warning")).pipe(Effect.ignore)
    }
    const startup = errors.find((error) => error._tag !== "IntercomConfigFileError")
    if (startup !== undefined) return yield* Effect.fail(startup)
    if (!settings.enabled) return yield* Effect.fail(disabled(settings))
    const startedAt = yield* Clock.currentTimeMillis
    // The journal as found: its entries, the instance it names, and the instances its undelivered checkpoints name.
    const found = yield* access.touch((_pi, c) => {
      const entries: ReadonlyArray<EntryView> = c.sessionManager.getEntries()
      return { entries, inherited: inheritedInstance(sessionId, entries), instances: undeliveredInstances(sessionId, entries) }
    }).pipe(Effect.orElseSucceed(() => ({ entries: [], inherited: undefined, instances: [] })))
    // The client instance the journal names, unless a live generation holds it (instance.ts); held until this
    // runtime is disposed, after the client it is built before has left the bus. In memory nothing inherits it.
    const instance = seed.sessionFile === undefined ? undefined : yield* claimInstance({
      intercomDir: settings.paths.intercomDir,
      inherited: found.inherited
    })
    // The session open twice: a message whose checkpoint names an instance another live generation holds is
    // that one's (it received it, or restored it when it started); handed over here too, both agents would act
    // on it. Decided per checkpoint, so a message whose holder died is restored here whatever the latest names.
    const leftTo = instance === undefined
      ? new Set<string>()
      : yield* liveInstances(settings.paths.intercomDir, found.instances.filter((id) => id !== instance.instanceId))
    const left = leftTo.size === 0
      ? 0
      : undeliveredIn(sessionId, found.entries).length - undeliveredIn(sessionId, found.entries, leftTo).length
    if (left > 0 && hasUI) {
      yield* access.touch((_pi, c) => c.ui.notify(leftToOtherNotice(left), "warning")).pipe(Effect.ignore)
    }
    const client = IntercomClient.layer({
      agentDir: settings.paths.agentDir,
      intercomDir: settings.paths.intercomDir,
      socketPath: settings.paths.socketPath,
      sessionId,
      scopeId: settings.scopeId,
      // C-GRP-2: a launcher injects a child's group as ATOMIC_INTERCOM_GROUP; else config `group`, else default.
      group: settings.group,
      registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt, statusSuffix: settings.status }),
      launch: settings.broker,
      sendTimeoutMs: settings.sendTimeoutMs,
      listTimeoutMs: settings.listTimeoutMs,
      livenessIntervalMs: settings.liveness.intervalMs,
      livenessTimeoutMs: settings.liveness.timeoutMs,
      supervisorGrant: child?.grant,
      ownerToken,
      ...(instance === undefined ? {} : { instanceId: instance.instanceId }),
      // The session runtime consumes it: confirm what it checkpointed, from the first mail on (known issue 21).
      confirmWhenHandled: true,
      // A checkpoint lives in pi's memory until pi writes the session file: confirm nothing before
      // that, so a process that ends first leaves the mail to the broker (the lifecycle fiber releases).
      withholdConfirmations: !checkpointsDurable(seed.sessionFile),
      // Bounded: past it the client confirms anyway (the status fiber warns), rather than the client and the
      // broker holding every message of a session nobody prompts for as long as it runs (docs/pi.md).
      withholdLimit: settings.unsavedMessageLimit,
      // After a takeover (this pi session open in another pi process too) the client stays off until that
      // process leaves (it then takes the id back by itself); /reload takes it back at once.
      takenOverHint: TAKE_BACK_HINT,
      // Asked before each reconnect: a session pi's SDK disposed (its context stale) starts no reconnect, nor
      // a broker, in the moments before `orphanWatch` sees it and closes the generation.
      shouldReconnect: sessionLive.pipe(Effect.as(true), Effect.orElseSucceed(() => false))
    })
    const piHost = makePiHost({
      access,
      sessionId,
      identity,
      hasUI,
      interactive,
      checkpointInstance: instance?.forCheckpoint ?? Effect.succeed(undefined),
      leftTo,
      queued
    })
    // Each hand-off to pi nudges the status fiber: a warning about unsaved mail shows at once, not at the next tick.
    const host = Host.layer({ ...piHost, deliver: (inbound) => Effect.tap(piHost.deliver(inbound), Queue.offer(delivered, true)) })
    const session = IntercomSession.layer({
      askTimeoutMs: settings.askTimeoutMs,
      replyHint: settings.replyHint,
      confirmSend: settings.confirmSend,
      statusSuffix: settings.status,
      inboundTrigger: settings.inboundTrigger,
      toolVisibility: input.toolVisibility,
      defaultScope: "project",
      childBridge: child
    })
    return Layer.mergeAll(lifecycleLayer, statusLayer(settings.unsavedMessageLimit), takeoverOnStderr, orphanWatch).pipe(
      Layer.provideMerge(session),
      Layer.provideMerge(Layer.merge(client, host))
    )
  })).pipe(
    // OTLP export when OTEL_EXPORTER_OTLP_* say so (docs/observability.md): merged, so tool calls run under its tracer too.
    Layer.provideMerge(Telemetry.layer("pi-intercom")),
    Layer.provide(Layer.mergeAll(NodeServices.layer, Logger.layer([])))
  )

  /**
   * Applies pi's lifecycle events in order (the one owner of the session's lifecycle inputs): first what came before it ran.
   * After each, while the client withholds its confirmations, it looks whether pi has written the session
   * file meanwhile — pi does so in a run (its first user or assistant message), and a run's events come
   * through here, at the latest its `agent_settled` — and releases them once it has.
   */
  const lifecycleLayer = Layer.effectDiscard(Effect.gen(function*() {
    const session = yield* IntercomSession
    const client = yield* IntercomClient
    /**
     * The session file has been seen to exist (or there is none to wait for). Until then the client may
     * withhold (it decided when it was built; a release of one that does not is a no-op).
     */
    let durable = false
    const releaseOnceDurable = Effect.suspend(() => {
      if (durable || !checkpointsDurable(seed.sessionFile)) return Effect.void
      durable = true
      return client.releaseConfirmations
    })
    const apply = (event: LifecycleEvent): Effect.Effect<void> => Effect.andThen(applyEvent(event), releaseOnceDurable)
    const applyEvent = (event: LifecycleEvent): Effect.Effect<void> => {
      switch (event._tag) {
        case "Status":
          return session.setStatus(event.status)
        case "Identity": {
          // A child's capability is bound to its name: a rename in pi must not change it on the bus.
          const { model } = event.update
          return session.setIdentity(child === undefined ? event.update : model === undefined ? {} : { model })
        }
        case "BeginTurn":
          return Effect.asVoid(session.beginTurn(event.message))
        case "EndTurn":
          return session.endTurn
        case "Applied":
          return Effect.asVoid(Deferred.succeed(event.done, undefined))
      }
    }
    const earlier = backlog.start()
    yield* Effect.forkScoped(
      Effect.andThen(
        Effect.andThen(releaseOnceDurable, Effect.forEach(earlier, apply, { discard: true })),
        Stream.runForEach(Stream.fromQueue(events), apply)
      )
    )
  }))

  /**
   * The footer status line (TUI and RPC only): connection state (or a takeover, with its notice, once), a wait in progress, pending asks, and
   * the messages pi has not saved yet; with the warnings about those (`unsavedMessageLimit`: one at half
   * of it, one when the client confirmed them anyway). Each second, and after each hand-off to pi.
   */
  const statusLayer = (unsavedLimit: number) => Layer.effectDiscard(Effect.gen(function*() {
    if (!hasUI) return
    const session = yield* IntercomSession
    const client = yield* IntercomClient
    let shown: string | undefined
    /** pi has been seen to have written the session file: nothing it holds is unsaved any more. */
    let saved = false
    const warnings = new UnsavedWarnings(unsavedLimit)
    /**
     * The takeover notice was shown: once per takeover (the client takes the id back by itself once the
     * other process has left, and a /reload starts a new generation, which takes it back at once).
     */
    let toldTakenOver = false
    const notify = (text: string) => access.touch((_pi, c) => c.ui.notify(text, "warning")).pipe(Effect.ignore)
    const refresh = Effect.gen(function*() {
      const withheld = yield* client.withheld
      if (!saved && !withheld.withholding) saved = checkpointsDurable(seed.sessionFile)
      for (const warning of warnings.due(withheld, saved)) yield* notify(warning)
      const status = yield* client.status
      if (status.takenOver !== undefined && !toldTakenOver) {
        toldTakenOver = true
        yield* notify(takenOverNotice(status.takenOver))
      } else if (status.takenOver === undefined) {
        toldTakenOver = false
      }
      const text = statusText(
        status,
        yield* session.waiting,
        yield* session.pendingCount,
        unsavedText(withheld, saved)
      )
      if (text === shown) return
      shown = text
      yield* access.touch((_pi, c) => c.ui.setStatus(STATUS_KEY, text)).pipe(Effect.ignore)
    })
    const tick = Effect.asVoid(Effect.timeoutOption(Queue.take(delivered), "1 second"))
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(refresh, tick)))
  }))

  /**
   * Without a UI (print and json modes: no notice, no footer) a takeover is said on stderr instead — the
   * same notice, once per generation (a print-mode run is short; stdout stays the run's output).
   */
  const takeoverOnStderr = Layer.effectDiscard(Effect.gen(function*() {
    if (hasUI) return
    const client = yield* IntercomClient
    yield* Effect.forkScoped(client.whenTakenOver.pipe(
      Effect.catch((error) =>
        Console.error(error.takenOver === undefined ? `Intercom: ${error.reason}` : takenOverNotice(error.takenOver))
      )
    ))
  }))

  /**
   * pi can end a session without `session_shutdown`: its SDK's `AgentSession.dispose()` only makes
   * the extension's context stale (pi's own exit paths and `AgentSessionRuntime.dispose()` do emit
   * it). A generation nobody closes would keep its client — registered, reconnecting after a drop,
   * spawning a broker again into an agent dir that may be gone — and keep the process alive. So a
   * built generation asks pi every `ORPHAN_CHECK` whether its session is still live, and closes
   * itself once pi says it is stale (or the generation is closing already: `close` is idempotent).
   * Its client asks the same before each reconnect (`shouldReconnect`), so a drop within an
   * `ORPHAN_CHECK` of the disposal starts no reconnect meanwhile.
   */
  const orphanWatch = Layer.effectDiscard(Effect.forkScoped(
    sessionLive.pipe(
      Effect.repeat(Schedule.spaced(ORPHAN_CHECK)),
      // Not awaited: closing disposes this runtime, which interrupts this fiber.
      Effect.catch(() => Effect.sync(() => void close()))
    )
  ))

  const runtime = ManagedRuntime.make(layer)
  const withSession = <A>(f: (session: IntercomSessionService) => Effect.Effect<A>): Effect.Effect<A, unknown, IntercomSession> =>
    Effect.gen(function*() {
      return yield* f(yield* IntercomSession)
    })

  /** C-ASK-3: a call whose signal fired (before or during it) is `Cancelled`, and reserved nothing. */
  const tool: PiGeneration["tool"] = (params, signal, ui = false) =>
    signal?.aborted === true
      ? Promise.resolve(cancelled)
      : runtime.runPromise(withSession((session) => ui ? session.act(params) : session.intercom(params)), { signal })
        .catch((error: unknown) =>
        signal?.aborted === true ? cancelled : buildFailure(error)
      )

  /** Unreachable through pi (the tool is registered only in a child); a clear error if called anyway. */
  const noSupervisor: ToolResult = {
    text: "contact_supervisor is only available in a delegated child with a supervisor grant",
    isError: true,
    details: { error: "NoSupervisor" }
  }
  const contactSupervisor: PiGeneration["contactSupervisor"] = (params, signal) =>
    signal?.aborted === true
      ? Promise.resolve(cancelled)
      : runtime.runPromise(
        withSession((session) => session.contactSupervisor === undefined ? Effect.succeed(noSupervisor) : session.contactSupervisor(params)),
        { signal }
      ).catch((error: unknown) => signal?.aborted === true ? cancelled : buildFailure(error))

  const authorize: PiGeneration["authorizeChild"] = ({ base, launch }) =>
    closed
      ? Promise.resolve({ ok: false, error: "the pi session of this intercom generation has ended" })
      : runtime.runPromise(
        Effect.map(authorizeChild(launch, base ?? process.env), (child): AuthorizeChildResult => ({
          ok: true,
          sessionName: child.sessionName,
          env: child.env
        }))
      ).catch((error: unknown): AuthorizeChildResult => ({
        ok: false,
        error: error instanceof Error ? error.message : String(error)
      }))

  const close = (): Promise<void> => {
    if (closing !== undefined) return closing
    if (hasUI) Effect.runSync(Effect.ignore(access.touch((_pi, c) => c.ui.setStatus(STATUS_KEY, undefined))))
    closed = true
    closing = runtime.dispose().finally(() => {
      disposed = true
    })
    return closing
  }

  // Building the runtime restores the journal's undelivered messages; connecting registers on the bus.
  // A lazily shown tool waits for its first use, but a session already on the bus before (a /reload, a
  // resume, a restart) joins again at once: peers' mail reaches it, and its undelivered messages come back.
  const ready = input.toolVisibility === "always" || seed.usedIntercom
    ? runtime.runPromise(withSession((session) => Effect.ignore(session.connect))).catch(() => undefined)
    : Promise.resolve()

  return {
    sessionId,
    ready,
    tool,
    loadTool: () =>
      runtime.runPromise(withSession((session) => session.loadTool)).catch(buildFailure),
    contactSupervisor,
    authorizeChild: authorize,
    lifecycle: (event) => {
      if (!closed) backlog.offer(event)
    },
    applied: () => {
      // Before the lifecycle fiber runs there is no presence to write: nothing to wait for.
      if (closed || !backlog.live) return Promise.resolve()
      const done = Deferred.makeUnsafe<void>()
      backlog.offer({ _tag: "Applied", done })
      return Effect.runPromise(Deferred.await(done).pipe(Effect.timeoutOption(APPLIED_WAIT), Effect.asVoid))
    },
    observe: (next) => {
      if (!closed) ctx = next
    },
    close
  }
}
