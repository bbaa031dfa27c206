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
  /** The foreground child, if any. */
  readonly current: () => SimChild | undefined
  /** The foreground child stops answering (it is busy elsewhere): C-ORD-11 `unavailable`. */
  readonly setUnavailable: (value: boolean) => Effect.Effect<void>
  /** The foreground call ends without a detach (the child finished). */
  readonly clear: () => void
  /** A new runtime generation (C-ORD-16); the broken build forgets to renew the handshake. */
  readonly renew: Effect.Effect<string>
}

/** Makes an agent's slot; its handshake lives in the current Scope. */
export const makeForegroundSlot = (core: WorldCore, agent: string): Effect.Effect<ForegroundSlot, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { ledger } = core
    let child: SimChild | undefined
    let responder: DetachResponder | undefined
    let generations = 0
    let committing = ""
    const handshake: DetachHandshake = yield* makeDetachHandshake({
      foreground: Effect.sync(() => child === undefined ? undefined : { targets: [child.name, child.id] }),
      send: (request) =>
        Effect.suspend(() => {
          ledger.detachSent(agent, request.phase, request.runtimeGeneration, request.messageId)
          const target = responder
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
    return {
      handshake,
      current: () => child,
      clear: () => {
        child = undefined
        responder = undefined
      },
      setUnavailable: (value) => responder === undefined ? Effect.void : responder.setUnavailable(value),
      renew,
      attach: (next) =>
        Effect.gen(function*() {
          next.detached = false
          const made: DetachResponder = yield* makeDetachResponder({
            targets: [next.name],
            release: Effect.sync(() => {
              next.detached = true
              if (child === next) {
                child = undefined
                responder = undefined
              }
              ledger.detached(agent, next.name, committing)
            }),
            reply: (ack) =>
              transmit(core, `${ack.phase} ack for ${ack.messageId} from ${next.name}`, handshake.acknowledge(ack))
          })
          child = next
          responder = made
          ledger.note(`${next.name} runs in the foreground of ${agent}`)
        })
    }
  })
