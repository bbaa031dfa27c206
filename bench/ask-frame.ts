/**
 * Microbench of one send's `message` frame for a recipient granted
 * `ask-timeout-v1` (issue 16; docs/performance.md, "Ask encoding,
 * sixty-seventh stop"): the size check's base frame, then the frame
 * written, then its bytes framed into the reused scratch buffer as the
 * writer does — built the way the broker built it before (a second
 * `messageFrameFor`, the message stringified again) and the way it does now
 * (`liveFrameFor`: the base frame with `askTimeoutMs` spliced in). A base
 * recipient's send (the base frame written as it is) is the reference.
 *
 *   npx node bench/ask-frame.ts [--sends 200000] [--blocks 10]
 *
 * Two asks: 100 B of text (`--sends` per block) and 10 KiB (a tenth as many).
 *
 * In-process and single-threaded: the two ways run in alternating blocks
 * (swapping which goes first), and the report gives each one's median
 * nanoseconds per send over the blocks and the per-block new ÷ old ratio.
 * It measures the frame build alone, not a round trip: the `ask-granted`
 * workload (bench/ab.ts) is the end-to-end measure.
 */
import { performance } from "node:perf_hooks"
import { extendsBaseFrame, liveFrameFor, messageFrameFor } from "../src/broker/RecipientFrames.ts"
import * as Encode from "../src/broker/encode.ts"
import type { Mail } from "../src/broker/Peer.ts"
import { decodeMessage, isFrameDecodeError } from "../src/protocol/decode.ts"
import { ASK_TIMEOUT_V1, RECEIVED_V1 } from "../src/protocol/features.ts"
import { encodeFramesInto, FrameScratch, type OutFrame } from "../src/protocol/framing.ts"
import { eachArg, helpOrUnknown, runScript } from "./args.ts"
import { fmt, table } from "./format.ts"
import { median } from "./stats.ts"
import { makeText } from "./harness.ts"
import { benchMessageId } from "./workloads.ts"

const usage = `usage: npx node bench/ask-frame.ts [--sends N] [--blocks N]
  --sends   sends per block of the 100 B ask (default 200000; the 10 KiB ask: a tenth)
  --blocks  alternating blocks of each way (default 10)`

type Build = (base: OutFrame, mail: Mail) => OutFrame

const GRANTED = { features: new Set([ASK_TIMEOUT_V1, RECEIVED_V1]) }
const BASE = { features: new Set([RECEIVED_V1]) }

/** How the broker built a granted recipient's frame before: a second encoding whenever it gets more than the base frame. */
const before: Build = (base, mail) =>
  extendsBaseFrame(mail, GRANTED) ? messageFrameFor(mail, GRANTED, mail.brokerReceivedAt) : base
/** How it builds it now. */
const now: Build = (base, mail) => liveFrameFor(base, mail, GRANTED)
/** A base recipient's frame (the same either way): the reference. */
const baseRecipient: Build = (base, mail) => liveFrameFor(base, mail, BASE)

/** An ask of `textBytes` of text, as the send pipeline holds it. */
const askMail = (textBytes: number): Mail => {
  const message = decodeMessage({
    id: benchMessageId("q", 0, 1),
    timestamp: 1_765_000_000_000,
    content: { text: makeText(textBytes) },
    expectsReply: true
  })
  if (isFrameDecodeError(message)) throw new Error(message.message)
  const stamp = 1_765_000_000_123
  return {
    recordKey: "k",
    senderKey: "s",
    senderId: "bench-asker",
    senderIdentity: undefined,
    fromJson: JSON.stringify({
      id: "bench-asker",
      name: "bench-asker",
      cwd: "/tmp/bench",
      model: "bench-model",
      pid: 4242,
      startedAt: 1_765_000_000_000,
      lastActivity: 1_765_000_000_000
    }),
    message,
    brokerReceivedAt: stamp,
    spaceKey: "",
    targetKey: "t",
    targetId: "bench-answerer",
    targetIdentity: undefined,
    queuedAt: stamp,
    askTimeoutMs: 60_000
  }
}

/** Nanoseconds per send of `build` over `sends` sends: base frame, the frame written, framed into `scratch`. */
const block = (build: Build, mail: Mail, sends: number, scratch: FrameScratch): number => {
  let bytes = 0
  const start = performance.now()
  for (let i = 0; i < sends; i++) {
    const base = Encode.messageFrame(mail.fromJson, mail.message, mail.brokerReceivedAt, mail.brokerReceivedAt)
    bytes += encodeFramesInto([build(base, mail)], scratch).length
  }
  const ns = ((performance.now() - start) * 1e6) / sends
  if (bytes === 0) throw new Error("nothing framed")
  return ns
}

const main = async (): Promise<number> => {
  let sends = 200_000
  let blocks = 10
  eachArg(process.argv.slice(2), usage, (arg) => {
    if (arg.key === "--sends") sends = arg.int(1_000, 10_000_000)
    else if (arg.key === "--blocks") blocks = arg.int(2, 100)
    else helpOrUnknown(arg, usage)
  })
  const scratch = new FrameScratch()
  const rows: Array<Array<string>> = []
  for (const textBytes of [100, 10 * 1024]) {
    const mail = askMail(textBytes)
    // A tenth as many sends of the long text, so each block takes a similar time.
    const perSend = textBytes === 100 ? sends : Math.max(1_000, Math.round(sends / 10))
    // Warm-up: every way compiled before the first measured block.
    for (const build of [before, now, baseRecipient]) block(build, mail, perSend, scratch)
    const old: Array<number> = []
    const cur: Array<number> = []
    const ref: Array<number> = []
    const ratios: Array<number> = []
    for (let b = 0; b < blocks; b++) {
      const first = b % 2 === 0
      const x = first ? block(before, mail, perSend, scratch) : 0
      const y = block(now, mail, perSend, scratch)
      const z = first ? 0 : block(before, mail, perSend, scratch)
      old.push(x + z)
      cur.push(y)
      ref.push(block(baseRecipient, mail, perSend, scratch))
      ratios.push(y / (x + z))
    }
    rows.push([
      textBytes === 100 ? "100 B" : "10 KiB",
      String(perSend),
      fmt(median(old)),
      fmt(median(cur)),
      `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
      fmt(median(ref))
    ])
  }
  process.stdout.write(
    `${
      table(
        ["ask text", "sends/block", "before ns/send", "now ns/send", "now ÷ before, median (range)", "base recipient ns/send"],
        rows
      )
    }\n`
  )
  return 0
}

runScript("ask-frame", main)
