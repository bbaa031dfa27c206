/**
 * An agent's foreground child in the workflow world: which child currently
 * holds the agent's `subagent` call, that child's side of the detach
 * handshake (the real `DetachResponder`), and the agent's side (the real
 * `DetachHandshake`) joined to it by the simulated link.
 *
 * One per agent (the parent, each stage). It owns the agent's runtime
 * generation as the world sees it, which the ledger checks commits against.
 */
import { Effect, type Scope } from "effect"
import { type DetachHandshake, makeDetachHandshake } from "../../workflow/DetachHandshake.ts"
import { type DetachResponder, makeDetachResponder } from "../../workflow/DetachResponder.ts"
import { transmit, type WorldCore } from "./links.ts"

/** A simulated child (name and id as the broker would describe it). */
export interface SimChild {
  readonly name: string
  readonly id: string
  /** The current run (a resume starts a new one, C-ORD-30). */
  runId: string
  runs: number
  /** Its run has ended with a terminal; a resume starts a new run. */
  done: boolean
  /** It detached from its agent's foreground supervision. */
  detached: boolean
}

/** An agent's foreground slot and detach handshake. */
export interface ForegroundSlot {
  readonly handshake: DetachHandshake
  /** Makes `child` the agent's foreground child (a new responder). */
  readonly attach: (child: SimChild) => Effect.Effect<void>
  /**
   * Adds `child` to the agent's foreground parallel group: its accepted
   * commit detaches every member at once and runs `release` (the group's
   * shared release, C-ORD-21).
   */
  readonly join: (child: SimChild, release: Effect.Effect<void>) => Effect.Effect<void>
  /** The first foreground child, if any. */
  readonly current: () => SimChild | undefined
  /** Every child in the foreground. */
  readonly members: () => ReadonlyArray<SimChild>
  /** The foreground children stop (or start again) answering: C-ORD-11 `unavailable`. */
  readonly setUnavailable: (value: boolean) => Effect.Effect<void>
  /** `child`'s foreground call ends without a detach (it finished). */
  readonly leave: (child: SimChild) => void
  /** A new runtime generation (C-ORD-16); the broken build forgets to renew the handshake. */
  readonly renew: Effect.Effect<string>
}

interface Member {
  readonly child: SimChild
  readonly responder: DetachResponder
}

/** Makes an agent's slot; its handshake lives in the current Scope. */
export const makeForegroundSlot = (core: WorldCore, agent: string): Effect.Effect<ForegroundSlot, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { ledger } = core
    let members: Array<Member> = []
    let generations = 0
    let committing = ""
    const handshake: DetachHandshake = yield* makeDetachHandshake({
      foreground: Effect.sync(() =>
        members.length === 0 ? undefined : { targets: members.flatMap((member) => [member.child.name, member.child.id]) }
      ),
      send: (request) =>
        Effect.suspend(() => {
          ledger.detachSent(agent, request.phase, request.runtimeGeneration, request.messageId)
          // C-ORD-11: the request goes to the child it names; it reaches a responder only while it is attached.
          const target = members.find((member) => member.child.name === request.childIntercomTarget)?.responder
          return transmit(
            core,
            `${request.phase} for ${request.messageId} to ${request.childIntercomTarget}`,
            target === undefined ? Effect.void : Effect.suspend(() => {
              committing = request.runtimeGeneration
              return target.onRequest(request)
            })
          )
        })
    })
    const renew = Effect.gen(function*() {
      generations++
      const id = `${agent}-g${generations}`
      if (core.broken !== "handshake-ignores-generation" || generations === 1) yield* handshake.renew(id)
      ledger.generation(agent, id)
      return id
    })
    yield* renew
    /** An accepted commit releases the whole foreground (C-ORD-12, C-ORD-21). */
    const detachAll = Effect.sync(() => {
      const released = members
      members = []
      for (const member of released) {
        member.child.detached = true
        ledger.detached(agent, member.child.name, committing)
      }
    })
    const join = (next: SimChild, release: Effect.Effect<void>) =>
      Effect.gen(function*() {
        next.detached = false
        const made: DetachResponder = yield* makeDetachResponder({
          targets: [next.name],
          release: Effect.andThen(detachAll, release),
          reply: (ack) =>
            transmit(core, `${ack.phase} ack for ${ack.messageId} from ${next.name}`, handshake.acknowledge(ack))
        })
        members.push({ child: next, responder: made })
        ledger.note(`${next.name} runs in the foreground of ${agent}`)
      })
    return {
      handshake,
      current: () => members[0]?.child,
      members: () => members.map((member) => member.child),
      leave: (child) => {
        members = members.filter((member) => member.child !== child)
      },
      setUnavailable: (value) => Effect.forEach(members, (member) => member.responder.setUnavailable(value), { discard: true }),
      renew,
      join,
      attach: (child) => join(child, Effect.void)
    }
  })
