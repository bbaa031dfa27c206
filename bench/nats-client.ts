/**
 * A minimal NATS client over TCP for the bench's outside reference: connect,
 * `CONNECT` + `PING`/`PONG` handshake, `SUB`, `PUB`, answer the server's
 * `PING`s, and hand every `MSG` to `onMsg`. Like `BenchClient`, each incoming
 * chunk is handled with the socket corked, so what is written in reaction to
 * one chunk leaves in one syscall. Protocol parsing is in `nats-protocol.ts`.
 */
import net from "node:net"
import { connectLine, type NatsMsg, NatsParser, pubText, subLine } from "./nats-protocol.ts"

const noop = (): void => {}

/** One connection to a NATS server (see the header). */
export class NatsClient {
  readonly socket: net.Socket
  /** Receives every `MSG`. */
  onMsg: (msg: NatsMsg) => void = noop
  /** Called after each incoming chunk was parsed (used to uncork sockets written to from `onMsg`). */
  afterChunk: () => void = noop
  private readonly pongs: Array<() => void> = []
  private closedError: Error | undefined = undefined
  /** Set when the server closes the connection or it fails. */
  readonly closed: Promise<Error>

  private constructor(socket: net.Socket) {
    this.socket = socket
    socket.setNoDelay(true)
    const parser = new NatsParser({
      onMsg: (msg) => this.onMsg(msg),
      onOp: (op) => {
        if (op.op === "PING") socket.write("PONG\r\n")
        else if (op.op === "PONG") this.pongs.shift()?.()
        else if (op.op === "ERR") this.fail(new Error(`nats-server: -ERR ${op.arg}`))
      }
    })
    socket.on("data", (chunk: Buffer) => {
      socket.cork()
      const error = parser.push(chunk)
      this.afterChunk()
      socket.uncork()
      if (error !== undefined) this.fail(new Error(`nats-server sent ${error}`))
    })
    this.closed = new Promise((resolve) => {
      socket.on("error", (e) => this.fail(e))
      socket.on("close", () => {
        this.fail(new Error("connection closed by nats-server"))
        resolve(this.closedError ?? new Error("closed"))
      })
    })
  }

  /** Connects to 127.0.0.1:`port` and completes the CONNECT/PING/PONG handshake. */
  static async connect(port: number, name: string, timeoutMs = 5000): Promise<NatsClient> {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.createConnection({ host: "127.0.0.1", port })
      const timer = setTimeout(() => {
        s.destroy()
        reject(new Error(`connect timeout (127.0.0.1:${port})`))
      }, timeoutMs)
      s.once("error", (e) => {
        clearTimeout(timer)
        reject(e)
      })
      s.once("connect", () => {
        clearTimeout(timer)
        s.removeAllListeners("error")
        resolve(s)
      })
    })
    const client = new NatsClient(socket)
    socket.write(connectLine(name))
    await client.flush(timeoutMs)
    return client
  }

  /** `PING` and wait for its `PONG`: everything written before has been processed by the server. */
  flush(timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closedError !== undefined) {
        reject(this.closedError)
        return
      }
      const timer = setTimeout(() => reject(new Error("nats-server: no PONG")), timeoutMs)
      this.pongs.push(() => {
        clearTimeout(timer)
        resolve()
      })
      this.socket.write("PING\r\n")
    })
  }

  /** Subscribes `sid` to `subject` (wildcards allowed). */
  sub(subject: string, sid: string): void {
    this.socket.write(subLine(subject, sid))
  }

  /** Publishes `payload` on `subject`, with an optional reply subject. */
  pub(subject: string, payload: string, replyTo?: string): void {
    this.socket.write(pubText(subject, payload, replyTo))
  }

  /** Drops the connection. */
  close(): void {
    this.socket.destroy()
  }

  private fail(error: Error): void {
    if (this.closedError === undefined) this.closedError = error
    if (!this.socket.destroyed) this.socket.destroy()
  }
}
