/**
 * A hand-driven Router (handRouter.ts) with durable questions: a supervisor, its bound child (`worker`, custody
 * granted, so what it is written stays unconfirmed until it says) and a peer `bob` in the child's group, each
 * connection's frames recorded (controlWorld.recordedSessions' way). No question fiber runs: a `question_ask`
 * stays asked (Questions' `asking`) until the test makes the fiber's calls (Questions.wait, Questions.notify).
 */
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { GROUPS_V1, QUESTIONS_V1, RECEIVED_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { registerFrame } from "./broker.ts"
import { fakeConnection } from "./fakeConnection.ts"
import { handRouter } from "./handRouter.ts"

/** The supervisor's session id: the owner of the child's questions. */
export const SUP = "sup-0001"
/** The child's session id. */
export const CHILD = "child-worker"
const TOKEN = "owner-token-of-the-supervisor"
const FEATURES = [GROUPS_V1, SUPERVISOR_V1, QUESTIONS_V1, RECEIVED_V1]

/** A frame as these tests read it. */
export interface QuestionSeen {
  readonly type: string
  readonly messageId?: string
  readonly requestId?: string
  readonly code?: string
  readonly reason?: string
  readonly error?: string
  readonly capability?: string
  readonly message?: { readonly id: string }
  readonly receipt?: { readonly status: string; readonly messageId: string }
}

/** The world on a Router driven by hand on the clock `now`, with `options`. */
export const questionHandWorld = (options: BrokerCoreOptions, now: () => number) =>
  Effect.gen(function*() {
    const hand = yield* handRouter(options, now, {}, true)
    const written = new Map<Peer, Array<QuestionSeen>>()
    let nextId = 1
    const connect = (sessionId: string, frame: Record<string, unknown>): Peer => {
      const frames: Array<QuestionSeen> = []
      const peer = hand.attach({
        ...fakeConnection(nextId++, false),
        write: (out: ReadonlyArray<OutFrame>) => {
          for (const item of out) frames.push(JSON.parse(frameText(item)))
          return undefined
        }
      })
      written.set(peer, frames)
      hand.batch(peer, [registerFrame({ sessionId, name: sessionId === CHILD ? "worker" : sessionId, frame })])
      return peer
    }
    /** What `peer` was written so far (its writer flushed first). */
    const framesOf = (peer: Peer): ReadonlyArray<QuestionSeen> => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    const supervisor = connect(SUP, { features: FEATURES, ownerToken: TOKEN })
    hand.batch(supervisor, [{ type: "authorize_supervisor", requestId: "auth", childName: "worker" }])
    const capability = framesOf(supervisor).find((f) => f.type === "supervisor_authorized")?.capability
    if (capability === undefined) throw new Error("setup: the supervisor was not authorized")
    const childFrame = { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
    /** Connects the child (again). */
    const connectChild = (): Peer => connect(CHILD, childFrame)
    const child = connectChild()
    /** Connects bob (again): a peer in the child's group, custody granted. */
    const connectBob = (): Peer => connect("bob", { features: [GROUPS_V1, RECEIVED_V1], group: "run-1" })
    const bob = connectBob()
    /** The answer `peer` was written for its send of `messageId`, if any. */
    const answerOf = (peer: Peer, messageId: string): QuestionSeen | undefined =>
      framesOf(peer).find((f) => (f.type === "delivered" || f.type === "delivery_failed") && f.messageId === messageId)
    return { ...hand, framesOf, supervisor, child, bob, connectChild, connectBob, answerOf }
  })

/** A `question_ask` of the question `questionId`. */
export const questionAskFrame = (questionId: string, requestId = "r-1") => ({
  type: "question_ask",
  requestId,
  questionId,
  reason: "need_decision",
  text: "Which way?"
})
