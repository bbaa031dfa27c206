/**
 * Minimal framing client used by every workload: connect, register, send,
 * await frames by predicate. Each incoming chunk is processed with the socket
 * corked, so frames written in reaction to one chunk leave in one syscall.
 *
 * Frames are dispatched in order: first to the oldest pending waiter whose
 * predicate matches, otherwise to `onFrame`. After `discard()` incoming bytes
 * are dropped without framing or parsing (idle sessions).
 */
import net from "node:net"
import { encodeFrame, encodeText, FrameSplitter, getString, parsePayload } from "./framing.ts"

export type Frame = Record<string, unknown>
export type FrameHandler = (frame: Frame) => void

interface Waiter {
  readonly pred: (frame: Frame) => boolean
  readonly resolve: (frame: Frame) => void
  readonly reject: (error: Error) => void
  readonly timer: NodeJS.Timeout
}

interface RawWaiter {
  readonly match: (payload: Buffer, start: number, end: number) => boolean
  readonly resolve: (payloadBytes: number) => void
  readonly reject: (error: Error) => void
  readonly timer: NodeJS.Timeout
}

export interface RegisterOptions {
  readonly name?: string
  readonly scopeId?: string
  readonly timeoutMs?: number
  /** Extensions to ask for in `register.features` (e.g. `delivery-v1`, `topics-v1`). */
  readonly features?: ReadonlyArray<string>
}

const noop = (): void => {}

export class BenchClient {
  readonly socket: net.Socket
  /** Receives every frame no waiter claimed. */
  onFrame: FrameHandler = noop
  sessionId: string | undefined = undefined
  private readonly waiters: Array<Waiter> = []
  private readonly rawWaiters: Array<RawWaiter> = []
  private readonly splitter: FrameSplitter
  private discarding = false
  private toCache: readonly [string, string] = ["", '""']
  private textCache: readonly [string, string] = ["", '""']
  private closedError: Error | undefined = undefined
  /** `received-v1` granted: after each chunk that held messages, say how many frames were read (as IntercomClient does). */
  private confirming = false
  private framesRead = 0
  private sawMessage = false
  /** Set when the broker closes the connection or it fails. */
  readonly closed: Promise<Error>

  private constructor(socket: net.Socket) {
    this.socket = socket
    this.splitter = new FrameSplitter((buf, start, end) => {
      if (this.discarding) return
      this.framesRead++
      if (this.rawWaiters.length > 0 && this.dispatchRaw(buf, start, end)) return
      const frame = parsePayload(buf, start, end)
      if (frame !== undefined && frame["type"] === "message") this.sawMessage = true
      if (frame === undefined) {
        this.fail(new Error("broker sent a frame that is not a JSON object with a string type"))
        return
      }
      this.dispatch(frame)
    })
    socket.on("data", (chunk: Buffer) => {
      if (this.discarding) return
      socket.cork()
      const ok = this.splitter.push(chunk)
      if (this.sawMessage && this.confirming) this.writeText(`{"type":"received","frames":${this.framesRead}}`)
      this.sawMessage = false
      socket.uncork()
      if (!ok) this.fail(new Error("broker sent a frame over 1 MiB"))
    })
    this.closed = new Promise((resolve) => {
      socket.on("error", (e) => this.fail(e))
      socket.on("close", () => {
        this.fail(new Error("connection closed by broker"))
        resolve(this.closedError ?? new Error("closed"))
      })
    })
  }

  static connect(path: string, timeoutMs = 5000): Promise<BenchClient> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection({ path })
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error(`connect timeout (${path})`))
      }, timeoutMs)
      const onError = (e: Error): void => {
        clearTimeout(timer)
        reject(e)
      }
      socket.once("error", onError)
      socket.once("connect", () => {
        clearTimeout(timer)
        socket.off("error", onError)
        resolve(new BenchClient(socket))
      })
    })
  }

  get isClosed(): boolean {
    return this.closedError !== undefined
  }

  write(frame: object): void {
    this.socket.write(encodeFrame(frame))
  }

  writeText(text: string): void {
    this.socket.write(encodeText(text))
  }

  /**
   * Sends a `send` frame with a plain text message (acks arrive as frames).
   * Built as a template string around cached JSON of `to` and `text`, so the
   * harness spends little CPU per message. `extra`: more fields of the
   * message; `frameExtra`: more fields of the frame (`askTimeoutMs`).
   */
  send(to: string, id: string, text: string, extra?: Record<string, unknown>, frameExtra?: Record<string, unknown>): void {
    if (to !== this.toCache[0]) this.toCache = [to, JSON.stringify(to)]
    if (text !== this.textCache[0]) this.textCache = [text, JSON.stringify(text)]
    this.writeText(
      `{"type":"send","to":${this.toCache[1]},"message":{"id":${JSON.stringify(id)},"timestamp":${Date.now()},"content":{"text":${
        this.textCache[1]
      }}${fieldsJson(extra)}}${fieldsJson(frameExtra)}}`
    )
  }

  waitFor(pred: (frame: Frame) => boolean, timeoutMs = 10_000, what = "frame"): Promise<Frame> {
    return new Promise((resolve, reject) => {
      if (this.closedError !== undefined) {
        reject(new Error(`waiting for ${what}: ${this.closedError.message}`))
        return
      }
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(waiter)
        if (i >= 0) this.waiters.splice(i, 1)
        reject(new Error(`timeout waiting for ${what}`))
      }, timeoutMs)
      const waiter: Waiter = {
        pred,
        resolve,
        reject: (e) => reject(new Error(`waiting for ${what}: ${e.message}`)),
        timer
      }
      this.waiters.push(waiter)
    })
  }

  /**
   * Like `waitFor`, but matches the raw payload bytes before any JSON parsing;
   * a matched frame is consumed unparsed and resolves with its payload size.
   * Used for large replies (e.g. `sessions` with 1,000 entries), where parsing
   * in the harness would dominate the measured latency.
   */
  waitForRaw(match: (payload: Buffer, start: number, end: number) => boolean, timeoutMs = 10_000, what = "frame"): Promise<number> {
    return new Promise((resolve, reject) => {
      if (this.closedError !== undefined) {
        reject(new Error(`waiting for ${what}: ${this.closedError.message}`))
        return
      }
      const timer = setTimeout(() => {
        const i = this.rawWaiters.indexOf(waiter)
        if (i >= 0) this.rawWaiters.splice(i, 1)
        reject(new Error(`timeout waiting for ${what}`))
      }, timeoutMs)
      const waiter: RawWaiter = {
        match,
        resolve,
        reject: (e) => reject(new Error(`waiting for ${what}: ${e.message}`)),
        timer
      }
      this.rawWaiters.push(waiter)
    })
  }

  /** Sends `register` and waits for `registered` (which must be the first frame). */
  async register(sessionId: string, options: RegisterOptions = {}): Promise<Frame> {
    const now = Date.now()
    const session: Record<string, unknown> = {
      name: options.name ?? sessionId,
      cwd: "/tmp/bench",
      model: "bench-model",
      pid: process.pid,
      startedAt: now,
      lastActivity: now
    }
    const frame: Record<string, unknown> = { type: "register", session, sessionId }
    if (options.scopeId !== undefined) frame["scopeId"] = options.scopeId
    // Every bench client confirms what it read when the broker grants it (a durable broker does), like IntercomClient.
    frame["features"] = [...(options.features ?? []), "received-v1"]
    const reply = this.waitFor(() => true, options.timeoutMs ?? 10_000, `registered for ${sessionId}`)
    this.write(frame)
    const first = await reply
    if (first["type"] !== "registered") {
      throw new Error(`expected registered, got ${JSON.stringify(first).slice(0, 200)}`)
    }
    this.sessionId = getString(first, "sessionId") ?? sessionId
    const granted = first["features"]
    this.confirming = Array.isArray(granted) && granted.includes("received-v1")
    return first
  }

  /** Stops framing and parsing: every later byte is read and dropped. */
  discard(): void {
    this.discarding = true
  }

  close(): void {
    this.socket.destroy()
  }

  private dispatch(frame: Frame): void {
    const waiters = this.waiters
    for (let i = 0; i < waiters.length; i++) {
      const w = waiters[i]
      if (w !== undefined && w.pred(frame)) {
        waiters.splice(i, 1)
        clearTimeout(w.timer)
        w.resolve(frame)
        return
      }
    }
    this.onFrame(frame)
  }

  private dispatchRaw(buf: Buffer, start: number, end: number): boolean {
    const waiters = this.rawWaiters
    for (let i = 0; i < waiters.length; i++) {
      const w = waiters[i]
      if (w !== undefined && w.match(buf, start, end)) {
        waiters.splice(i, 1)
        clearTimeout(w.timer)
        w.resolve(end - start)
        return true
      }
    }
    return false
  }

  private fail(error: Error): void {
    if (this.closedError === undefined) this.closedError = error
    const pending = this.waiters.splice(0)
    for (const w of pending) {
      clearTimeout(w.timer)
      w.reject(error)
    }
    const pendingRaw = this.rawWaiters.splice(0)
    for (const w of pendingRaw) {
      clearTimeout(w.timer)
      w.reject(error)
    }
    if (!this.socket.destroyed) this.socket.destroy()
  }
}

/** `extra`'s fields as JSON members, each after a comma (`""` for none). */
const fieldsJson = (extra: Record<string, unknown> | undefined): string => {
  let fields = ""
  if (extra !== undefined) for (const [k, v] of Object.entries(extra)) fields += `,${JSON.stringify(k)}:${JSON.stringify(v)}`
  return fields
}

/** Connects and registers, retrying a few times if the broker drops the connection first. */
export const connectAndRegister = async (
  path: string,
  sessionId: string,
  options: RegisterOptions = {},
  attempts = 3
): Promise<{ client: BenchClient; retries: number }> => {
  let lastError: unknown
  for (let i = 0; i < attempts; i++) {
    let client: BenchClient | undefined
    try {
      client = await BenchClient.connect(path)
      await client.register(sessionId, options)
      return { client, retries: i }
    } catch (e) {
      client?.close()
      lastError = e
    }
  }
  throw lastError instanceof Error ? lastError : new Error(String(lastError))
}
