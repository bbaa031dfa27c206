/**
 * The bench's NATS text-protocol parser (bench/nats-protocol.ts): server
 * operations and MSG payloads come out whole however the bytes are split
 * across chunks, and bytes that are not NATS protocol are reported.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { connectLine, leadingSeq, type NatsOp, NatsParser, pubText, subLine } from "../../bench/nats-protocol.ts"

interface Seen {
  readonly msgs: Array<{ subject: string; sid: string; replyTo: string | undefined; payload: string }>
  readonly ops: Array<NatsOp>
}

const parserWith = (): { parser: NatsParser; seen: Seen } => {
  const seen: Seen = { msgs: [], ops: [] }
  const parser = new NatsParser({
    onMsg: (m) => seen.msgs.push({ subject: m.subject, sid: m.sid, replyTo: m.replyTo, payload: m.buf.toString("utf8", m.start, m.end) }),
    onOp: (op) => seen.ops.push(op)
  })
  return { parser, seen }
}

const stream = [
  `INFO {"server_id":"x","max_payload":1048576}\r\n`,
  "PING\r\n",
  "MSG bench.rx.0 1 5\r\nhello\r\n",
  "+OK\r\n",
  "MSG bench.svc 7 bench.inbox 11\r\n12 question\r\n",
  "PONG\r\n",
  "MSG empty 2 0\r\n\r\n",
  "HMSG h.s 3 18 23\r\nNATS/1.0\r\nA: b\r\n\r\nbody!\r\n",
  "-ERR 'Unknown Protocol Operation'\r\n"
].join("")

const expectedMsgs = [
  { subject: "bench.rx.0", sid: "1", replyTo: undefined, payload: "hello" },
  { subject: "bench.svc", sid: "7", replyTo: "bench.inbox", payload: "12 question" },
  { subject: "empty", sid: "2", replyTo: undefined, payload: "" },
  { subject: "h.s", sid: "3", replyTo: undefined, payload: "body!" }
]

const expectedOps: Array<NatsOp> = [
  { op: "INFO", arg: `{"server_id":"x","max_payload":1048576}` },
  { op: "PING" },
  { op: "OK" },
  { op: "PONG" },
  { op: "ERR", arg: "'Unknown Protocol Operation'" }
]

describe("NatsParser", () => {
  it("parses every server operation and MSG/HMSG payload in one chunk", () => {
    const { parser, seen } = parserWith()
    assert.strictEqual(parser.push(Buffer.from(stream)), undefined)
    assert.deepStrictEqual(seen.msgs, expectedMsgs)
    assert.deepStrictEqual(seen.ops, expectedOps)
  })

  it("gives the same result however the bytes are split into chunks", () => {
    const bytes = Buffer.from(stream)
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), (cuts) => {
        const { parser, seen } = parserWith()
        let from = 0
        for (const at of [...cuts].sort((a, b) => a - b)) {
          assert.strictEqual(parser.push(bytes.subarray(from, at)), undefined)
          from = at
        }
        assert.strictEqual(parser.push(bytes.subarray(from)), undefined)
        assert.deepStrictEqual(seen.msgs, expectedMsgs)
        assert.deepStrictEqual(seen.ops, expectedOps)
      })
    )
  })

  it("reports an unknown operation, a malformed MSG line and a payload without its CRLF", () => {
    assert.match(parserWith().parser.push(Buffer.from("HELLO there\r\n")) ?? "", /unknown operation/)
    assert.match(parserWith().parser.push(Buffer.from("MSG a\r\n")) ?? "", /malformed MSG line/)
    assert.match(parserWith().parser.push(Buffer.from("MSG a 1 x\r\n")) ?? "", /malformed MSG sizes/)
    assert.match(parserWith().parser.push(Buffer.from("MSG a 1 2\r\nabXY")) ?? "", /not followed by CRLF/)
  })

  it("waits for the rest of a payload that has not arrived yet", () => {
    const { parser, seen } = parserWith()
    assert.strictEqual(parser.push(Buffer.from("MSG a 1 10\r\n01234")), undefined)
    assert.deepStrictEqual(seen.msgs, [])
    assert.strictEqual(parser.push(Buffer.from("56789\r\n")), undefined)
    assert.deepStrictEqual(seen.msgs.map((m) => m.payload), ["0123456789"])
  })
})

describe("client lines", () => {
  it("PUB counts the payload's UTF-8 bytes and carries the reply subject", () => {
    assert.strictEqual(pubText("s", "héllo"), "PUB s 6\r\nhéllo\r\n")
    assert.strictEqual(pubText("s", "x", "inbox"), "PUB s inbox 1\r\nx\r\n")
    assert.strictEqual(subLine("bench.rx.*", "1"), "SUB bench.rx.* 1\r\n")
  })

  it("CONNECT asks for no +OK per line and no echo of our own publications", () => {
    const line = connectLine("bench")
    assert.isTrue(line.startsWith("CONNECT {") && line.endsWith("}\r\n"))
    const options: unknown = JSON.parse(line.slice("CONNECT ".length))
    assert.deepInclude(options, { verbose: false, echo: false })
  })
})

describe("leadingSeq", () => {
  it("reads the digits before the first space, NaN for anything else", () => {
    const at = (s: string): number => leadingSeq(Buffer.from(s), 0, Buffer.byteLength(s))
    assert.strictEqual(at("42 text"), 42)
    assert.isNaN(at("42"))
    assert.isNaN(at(" 42 text"))
    assert.isNaN(at("4x2 text"))
  })
})
