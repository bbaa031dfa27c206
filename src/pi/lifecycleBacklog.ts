/**
 * pi's lifecycle events for one generation, from pi's callbacks to the
 * generation's lifecycle fiber (generation.ts).
 *
 * The fiber exists only once the generation's runtime is built: at once with
 * `toolVisibility: "always"`, at the first intercom call with
 * `after-first-use`, and never when intercom is disabled or its config stops
 * the start. Until then there is nothing to apply the events to, so they are
 * folded into the state they amount to — the identity's fields, the last
 * status, whether a turn is open — instead of queueing every one (a session
 * that never uses intercom would queue two events per tool call, for ever),
 * and an `Applied` is answered at once: pi's `agent_settled` has nothing on
 * the bus to wait for (before this module, it waited the whole two seconds
 * after every run). `start` hands the fiber that state as events, oldest
 * first, and from then on every event goes to it as it comes.
 *
 * Owner: the generation; pi's callbacks and the fiber's start call it, both
 * on the event loop's thread, so its few fields need no other guard.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { HostIdentity } from "../session/Host.ts"
import type { TurnMessage } from "../session/ReplyTracker.ts"
import type { LifecycleStatus } from "../session/render.ts"

/**
 * A lifecycle change pi reported, applied in order by the generation.
 *
 * @category models
 * @since 0.1.0
 */
export type LifecycleEvent =
  | { readonly _tag: "Status"; readonly status: LifecycleStatus }
  | { readonly _tag: "Identity"; readonly update: Partial<HostIdentity> }
  /** The turn's triggering message, by its sender's session id and its id (`IntercomSession.beginTurn`). */
  | { readonly _tag: "BeginTurn"; readonly message: TurnMessage }
  | { readonly _tag: "EndTurn" }
  /**
   * Completed once every event queued before it was applied (with its
   * presence written): pi's `agent_settled` waits for it, so the broker knows
   * this session is idle again (health-v1, C-HLT-3) before pi says so.
   */
  | { readonly _tag: "Applied"; readonly done: Deferred.Deferred<void> }

/**
 * The events of a generation whose lifecycle fiber may not run yet; see the
 * module header.
 *
 * @example
 * ```ts
 * const backlog = new LifecycleBacklog((event) => Queue.offerUnsafe(events, event))
 * backlog.offer({ _tag: "Status", status: "thinking" }) // folded: no fiber yet
 * backlog.live                                          // false: an `applied` need not wait
 * const first = backlog.start()                         // [{ _tag: "Status", status: "thinking" }]
 * backlog.offer({ _tag: "EndTurn" })                    // to the queue from now on
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class LifecycleBacklog {
  private started = false
  private identity: Partial<HostIdentity> | undefined = undefined
  private status: LifecycleStatus | undefined = undefined
  /** The open turn's `BeginTurn`, or undefined when none is open (never opened, or ended). */
  private turn: LifecycleEvent | undefined = undefined
  private readonly send: (event: LifecycleEvent) => void

  /** @param send where events go once the fiber has started (its queue). */
  constructor(send: (event: LifecycleEvent) => void) {
    this.send = send
  }

  /** Whether the fiber has started: only then is an `Applied` worth waiting for. */
  get live(): boolean {
    return this.started
  }

  /** Takes one event from pi: to the fiber once it started, else into the state it amounts to. */
  offer(event: LifecycleEvent): void {
    if (this.started) return this.send(event)
    switch (event._tag) {
      case "Status":
        this.status = event.status
        return
      case "Identity":
        this.identity = { ...this.identity, ...event.update }
        return
      case "BeginTurn":
        this.turn = event
        return
      case "EndTurn":
        this.turn = undefined
        return
      case "Applied":
        // Nothing waits to be applied.
        Deferred.doneUnsafe(event.done, Effect.void)
        return
    }
  }

  /** The fiber starts: what happened before, as events to apply first; every later event goes to `send`. */
  start(): ReadonlyArray<LifecycleEvent> {
    this.started = true
    const events: Array<LifecycleEvent> = []
    if (this.identity !== undefined) events.push({ _tag: "Identity", update: this.identity })
    if (this.turn !== undefined) events.push(this.turn)
    if (this.status !== undefined) events.push({ _tag: "Status", status: this.status })
    this.identity = undefined
    this.turn = undefined
    this.status = undefined
    return events
  }
}
