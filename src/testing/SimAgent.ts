/**
 * A simulated agent: the `Host` of one session generation. It records what it
 * is handed (for the invariants and for scripted assertions) and, in `auto`
 * mode, answers asks the way a model would: after a delay, sometimes never.
 *
 * Its decisions come from its own seeded generator, so they are replayed
 * exactly; its reply fibers live in the generation's Scope, so a replaced
 * generation never answers late.
 */
import { Cause, Effect, FiberSet, Result, type Scope } from "effect"
import { headless, type HostIdentity, type HostService, type Inbound, type InboundJournal, type JournalRecord } from "../session/Host.ts"
import type { IntercomSessionService } from "../session/IntercomSession.ts"
import type { Ledger } from "./Ledger.ts"
import type { Prng } from "./Prng.ts"
import type { HostReadiness } from "./simulation/refusals.ts"

/** What a custom agent behaviour gets for each message its host is handed. */
export interface AgentContext {
  /** The agent's session name. */
  readonly name: string
  /** Its session generation: `reply`, `send`, `ask`, `setStatus`, … */
  readonly session: IntercomSessionService
  /** Seeded, per session generation: decisions replay exactly. */
  readonly random: Prng
  /** Adds a line to the run's trace. */
  readonly note: (text: string) => void
}

/**
 * Your own agent: runs for every inbound message, in a fiber of the session
 * generation (so a replaced generation never acts late). Sleep with
 * `Effect.sleep`: simulated time. Failures are traced and otherwise ignored.
 */
export type AgentBehaviour = (inbound: Inbound, context: AgentContext) => Effect.Effect<void, unknown>

/** What a host factory (`AgentPolicy.host`) gets once per session generation. */
export interface AgentHostContext {
  /** The agent's session name. */
  readonly name: string
  /** Its session id. */
  readonly sessionId: string
  /** The session generation's key (unique in the run). */
  readonly generation: string
  /** Adds a line to the run's trace. */
  readonly note: (text: string) => void
  /**
   * The session generation's runtime (`reply`, `send`, …), once it is built
   * (undefined before): for a host that answers over the bus, e.g. a
   * stage's correlated `replyError`.
   */
  readonly session: () => IntercomSessionService | undefined
}

/**
 * What an `AgentHost` that keeps its own journal returns: its inbound path,
 * and the journal its session generation's host has (a workflow parent's
 * `ParentJournal`, say). A message that journal restores when the
 * generation starts (its first answer to `undelivered`), and that an earlier
 * generation's host was handed already, is handed again without counting as
 * a second hand-off (`Ledger.hostRestored`): the journal says the agent
 * never got it. The bus ledger then cannot see a copy the agent gets twice,
 * so such a host must keep a model of its agent that checks it gets each
 * message once (the workflow parent's `checkModel`, BusParentModel.ts).
 */
export interface JournaledAgentHost {
  readonly deliver: (inbound: Inbound) => Effect.Effect<void, unknown>
  readonly journal: InboundJournal
}

/**
 * Your own inbound path: built once per session generation, in its Scope,
 * and handed every message after the ledger recorded it (instead of the
 * `auto`/`manual`/`custom` handling). A failure refuses the hand-off: the
 * session runtime hands the message again (C-DLV-12), and the ledger counts
 * it handed once. The bus-hosted workflow parent is
 * one (`testing/workflow/BusParent.ts`). It may return a journal with it
 * (`JournaledAgentHost`).
 */
export type AgentHost = (
  context: AgentHostContext
) => Effect.Effect<((inbound: Inbound) => Effect.Effect<void, unknown>) | JournaledAgentHost, never, Scope.Scope>

/** How a simulated agent treats what it is handed (docs/testing.md, "Scenarios"). */
export interface AgentPolicy {
  /**
   * `auto` answers inbound asks by itself (per `replyProbability` and
   * `replyDelayMs`); `manual` never does — a script replies explicitly;
   * `custom` runs `behaviour`.
   */
  readonly mode: "auto" | "manual" | "custom"
  /** With `custom`: what the agent does with each inbound message. */
  readonly behaviour?: AgentBehaviour | undefined
  /** Chance that an inbound ask gets an answer at all. Default 0.85. */
  readonly replyProbability: number
  /** The answer comes after a delay drawn uniformly from this range (ms). Default [0, 6000]. */
  readonly replyDelayMs: readonly [number, number]
  /**
   * Chance that an answer is a failure reply (`replyError`, C-ASK-7) rather
   * than a plain one. Default 0 (no draw is made, so existing seeds replay
   * unchanged).
   */
  readonly replyErrorProbability?: number | undefined
  /** Replaces how handed messages are treated by an inbound path of your own (see `AgentHost`). */
  readonly host?: AgentHost | undefined
}

/** The default agent: answers 85% of asks, after 0–6 s. */
export const defaultAgentPolicy: AgentPolicy = {
  mode: "auto",
  replyProbability: 0.85,
  replyDelayMs: [0, 6000]
}

/** One session generation's simulated agent: its host, and what it was handed. */
export interface SimAgent {
  /** The `Host` the session generation runs over. */
  readonly host: HostService
  /** Everything handed to this generation's host, in order. */
  readonly inbox: ReadonlyArray<Inbound>
  /** Connects the agent to its session once the session is built. */
  readonly attach: (session: IntercomSessionService) => void
}

/**
 * The agent of one session generation, living in the current Scope (its
 * reply fibers close with it). The simulation makes one per generation.
 */
export const makeSimAgent = (options: {
  readonly sessionId: string
  readonly identity: HostIdentity
  readonly policy: AgentPolicy
  readonly prng: Prng
  readonly ledger: Ledger
  /** The session generation's key, for `AgentPolicy.host`. */
  readonly generation?: string | undefined
  /**
   * A host journal (`--host-journal`, simulation/journal.ts): the host has it,
   * and `delivered` hears of every message handed to the agent (its history).
   */
  readonly journal?: {
    readonly host: InboundJournal
    readonly delivered: (fromId: string, messageId: string) => void
  } | undefined
  /**
   * A host that is not always ready (`--host-refusals`, simulation/refusals.ts):
   * a hand-off it refuses is neither recorded nor handed to the agent.
   */
  readonly readiness?: HostReadiness | undefined
}): Effect.Effect<SimAgent, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { ledger, policy, prng, sessionId } = options
    const replies = yield* FiberSet.make()
    const inbox: Array<Inbound> = []
    let session: IntercomSessionService | undefined
    const hosted = policy.host === undefined ? undefined : yield* policy.host({
      name: ledger.nameOf(sessionId),
      sessionId,
      generation: options.generation ?? sessionId,
      note: (text) => ledger.note(`${ledger.nameOf(sessionId)}: ${text}`),
      session: () => session
    })
    const handler = hosted === undefined || typeof hosted === "function" ? hosted : hosted.deliver
    /**
     * What this generation's own journal restored when it started (the runtime hands each again,
     * C-DLV-14), by sender and id. Only that first answer: the runtime asks again when the agent's run
     * settles and hands over only part of that answer, so a later one must not excuse a copy.
     */
    const restored = new Set<string>()
    let restoreAnswered = false
    const noteRestored = (records: ReadonlyArray<JournalRecord>) =>
      Effect.sync(() => {
        if (restoreAnswered) return
        restoreAnswered = true
        for (const record of records) restored.add(`${record.from.id}\u0000${record.message.id}`)
      })
    const ownJournal: InboundJournal | undefined = hosted === undefined || typeof hosted === "function" ? undefined : {
      ...hosted.journal,
      // A journal that saves nothing restores nothing.
      ...(hosted.journal.undelivered === undefined ? {} : { undelivered: Effect.tap(hosted.journal.undelivered, noteRestored) })
    }

    const custom = (inbound: Inbound, behaviour: AgentBehaviour): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (session === undefined) return Effect.void
        const context: AgentContext = {
          name: ledger.nameOf(sessionId),
          session,
          random: prng,
          note: (text) => ledger.note(`${ledger.nameOf(sessionId)}: ${text}`)
        }
        const run = behaviour(inbound, context).pipe(
          Effect.catchCause((cause) =>
            Effect.sync(() => ledger.note(`${ledger.nameOf(sessionId)}'s behaviour failed: ${describeFailure(cause)}`))
          )
        )
        return Effect.asVoid(FiberSet.run(replies, run))
      })

    const answer = (inbound: Inbound): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (policy.mode === "custom" && policy.behaviour !== undefined) return custom(inbound, policy.behaviour)
        if (policy.mode !== "auto" || !inbound.expectsReply) return Effect.void
        if (!prng.chance(policy.replyProbability)) {
          ledger.note(`${ledger.nameOf(sessionId)} will never answer ${ledger.alias(inbound.message.id)}`)
          return Effect.void
        }
        const delay = prng.int(policy.replyDelayMs[0], policy.replyDelayMs[1])
        const errorChance = policy.replyErrorProbability ?? 0
        const failing = errorChance > 0 && prng.chance(errorChance)
        const questionId = inbound.message.id
        const reply = Effect.gen(function*() {
          yield* Effect.sleep(delay)
          if (session === undefined) return
          const text = `re: ${inbound.message.content.text}`
          const result = yield* Effect.exit(
            session.reply(
              failing ? { message: text, replyTo: questionId, replyError: `cannot do ${inbound.message.content.text}` } : {
                message: text,
                replyTo: questionId
              }
            )
          )
          ledger.defectOf(`${ledger.nameOf(sessionId)}'s reply to ${ledger.alias(questionId)}`, result)
          ledger.note(
            `${ledger.nameOf(sessionId)} ${failing ? "failure reply" : "reply"} to ${ledger.alias(questionId)}: ${
              result._tag === "Success" ? `${ledger.alias(result.value.messageId)} ${result.value.delivery}` : describeFailure(result.cause)
            }`
          )
        })
        return Effect.asVoid(FiberSet.run(replies, reply))
      })

    // A host of your own may refuse a hand-off (the runtime retries it, C-DLV-12): it is handed once.
    const handed = new Set<string>()
    const take: HostService["deliver"] = (inbound) =>
      Effect.suspend(() => {
        const key = `${inbound.from.id}\u0000${inbound.message.id}`
        if (handler !== undefined && handed.has(key)) return handler(inbound)
        if (handler !== undefined) handed.add(key)
        inbox.push(inbound)
        options.journal?.delivered(inbound.from.id, inbound.message.id)
        if (restored.delete(key)) ledger.hostRestored(sessionId, inbound.from.id, inbound.message, inbound.intent, options.generation)
        else ledger.hostDelivered(sessionId, inbound.from.id, inbound.message, inbound.intent, options.generation)
        return handler === undefined ? answer(inbound) : handler(inbound)
      })
    const readiness = options.readiness
    const deliver: HostService["deliver"] = readiness === undefined
      ? take
      : (inbound) => Effect.andThen(readiness.admit(inbound), take(inbound))

    const journal = ownJournal ?? options.journal?.host
    return {
      host: journal === undefined ? headless(options.identity, deliver) : { ...headless(options.identity, deliver), journal },
      inbox,
      attach: (attached) => {
        session = attached
      }
    }
  })

/** The tag of a typed failure (with its message), or "Interrupted" / "Defect". */
export const describeFailure = <E>(cause: Cause.Cause<E>): string => {
  const error = Cause.findError(cause)
  if (Result.isSuccess(error)) {
    const value: unknown = error.success
    if (typeof value === "object" && value !== null && "_tag" in value && typeof value._tag === "string") {
      return "message" in value && typeof value.message === "string" && value.message !== ""
        ? `${value._tag} (${clipText(value.message)})`
        : value._tag
    }
    return String(value)
  }
  return Cause.hasInterruptsOnly(cause) ? "Interrupted" : "Defect"
}

const clipText = (text: string): string => text.length <= 60 ? text : `${text.slice(0, 59)}…`
