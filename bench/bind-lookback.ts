/**
 * Micro-bench of the client's look-back as a session binds an ask's waiter
 * (C-ORD-32, src/client/UnhandledMessages.ts `takeWaiting`): a backlog of
 * unhandled messages (half of them replies to earlier questions), then many
 * binds of brand-new questions, which nothing waiting can answer, and the
 * reader's `offer` path that fills the backlog. Prints one line per measure
 * (best of `--reps`, default 5).
 *
 * Usage: npx node bench/bind-lookback.ts [--backlog 10000] [--binds 1000] [--reps 5]
 */
import { Effect } from "effect"
import type { InboundMessage } from "../src/client/events.ts"
import { makeUnhandledMessages } from "../src/client/UnhandledMessages.ts"

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`)
  const value = at >= 0 ? Number(process.argv[at + 1]) : Number.NaN
  return Number.isFinite(value) && value > 0 ? value : fallback
}
const backlog = option("backlog", 10_000)
const binds = option("binds", 1_000)
const reps = option("reps", 5)

const from = { id: "peer", name: "peer", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const messages: Array<InboundMessage> = Array.from({ length: backlog }, (_, i) => ({
  from,
  message: { id: `m${i}`, timestamp: 0, content: { text: "x" }, ...(i % 2 === 1 ? { replyTo: `old${i}` } : {}) }
}))

let offerBest = Number.POSITIVE_INFINITY
let bindBest = Number.POSITIVE_INFINITY
for (let rep = 0; rep < reps; rep++) {
  const buffer = Effect.runSync(makeUnhandledMessages)
  const offerStart = performance.now()
  for (const message of messages) buffer.offer(message)
  offerBest = Math.min(offerBest, performance.now() - offerStart)
  const bindStart = performance.now()
  for (let i = 0; i < binds; i++) {
    const questionId = `new${rep}-${i}`
    // The session's take asks first whether the message answers the bound question.
    buffer.takeWaiting(questionId, (message) => message.message.replyTo === questionId)
  }
  bindBest = Math.min(bindBest, performance.now() - bindStart)
}
console.log(`backlog ${backlog}, ${binds} binds of new questions: ${bindBest.toFixed(3)} ms (${(bindBest * 1000 / binds).toFixed(3)} µs/bind)`)
console.log(`offer of the ${backlog}-message backlog: ${offerBest.toFixed(3)} ms (${(offerBest * 1e6 / backlog).toFixed(1)} ns/message)`)
