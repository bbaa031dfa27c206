/**
 * The healthy sessions check what arrives, not only that it arrives: a
 * message whose text the broker changed on the way is the finding
 * `healthy-altered`. A proxy between the healthy sessions and a real
 * (in-process) broker rewrites the text of the first plain `send` it
 * forwards; everything else passes through unchanged.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Schema } from "effect"
import * as net from "node:net"
import * as path from "node:path"
import { startBroker } from "../../src/fuzz/BrokerUnderTest.ts"
import { Findings } from "../../src/fuzz/Findings.ts"
import { makeHealthyTraffic } from "../../src/fuzz/HealthyTraffic.ts"
import { Tally } from "../../src/fuzz/Tally.ts"
import { encodeFrames, FrameDecoder } from "../../src/protocol/framing.ts"
import { Prng } from "../../src/testing/Prng.ts"

const MessageFrame = Schema.fromJsonString(Schema.Struct({
  type: Schema.Literal("message"),
  message: Schema.Struct({ id: Schema.String, content: Schema.Struct({ text: Schema.String }) })
}))
const decodeMessage = Schema.decodeUnknownOption(MessageFrame)

/** A proxy at `<dir>/proxy.sock` to `target` that alters the first plain send's text; `tampered` gets its id. */
const tamperingProxy = (target: string, tampered: Deferred.Deferred<string>) =>
  Effect.acquireRelease(
    Effect.callback<net.Server>((resume) => {
      const server = net.createServer((client) => {
        const upstream = net.createConnection(target)
        const decoder = new FrameDecoder()
        client.on("error", () => upstream.destroy())
        upstream.on("error", () => client.destroy())
        client.on("close", () => upstream.destroy())
        upstream.on("close", () => client.destroy())
        client.pipe(upstream)
        upstream.on("data", (chunk: Buffer) => {
          const texts: Array<string> = []
          decoder.push(chunk, texts)
          const out = texts.map((text) => {
            const frame = decodeMessage(text)
            if (frame._tag === "None" || !frame.value.message.content.text.startsWith("send ")) return text
            if (!Deferred.doneUnsafe(tampered, Effect.succeed(frame.value.message.id))) return text
            return text.replace(JSON.stringify(frame.value.message.content.text), JSON.stringify("send (changed)"))
          })
          if (out.length > 0) client.write(encodeFrames(out))
        })
      })
      server.listen(path.join(path.dirname(target), "proxy.sock"), () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

describe("the healthy sessions of a fuzz campaign", () => {
  it.live("report a message that arrives with another text than it was sent with (healthy-altered)", () =>
    Effect.scoped(Effect.gen(function*() {
      const broker = yield* startBroker("in-process")
      const tampered = yield* Deferred.make<string>()
      const proxy = yield* tamperingProxy(broker.socketPath, tampered)
      const address = proxy.address()
      assert.isString(address)
      const findings = new Findings()
      const healthy = yield* makeHealthyTraffic({
        socketPath: typeof address === "string" ? address : "",
        scopeId: "altered",
        prefix: "altered",
        prng: Prng.derive(1, "healthy"),
        findings,
        tally: new Tally()
      })
      yield* healthy.start
      yield* healthy.run
      const id = yield* Deferred.await(tampered)
      assert.isTrue(yield* healthy.finish(Duration.seconds(30)), "the final round trips were answered")
      const summary = findings.summary()
      assert.deepStrictEqual(summary.map((finding) => [finding.kind, finding.count]), [["healthy-altered", 1]], JSON.stringify(summary))
      assert.include(summary[0]?.examples[0] ?? "", id)
    })), 30_000)
})
