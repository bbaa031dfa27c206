/**
 * Text written as UTF-8 bytes into one growing buffer and read back once as
 * a string: what the replay block's encoder writes a commit's records with
 * (replayBlock.ts), so that a block costs one buffer and one string rather
 * than a string per field and per concatenation — about 400 bytes of garbage
 * per message, the largest allocation site of the durable broker after the
 * send pipeline's own objects (docs/performance.md, "Twenty-ninth stop").
 *
 * Plain synchronous code; one writer per block, owned by the call that made
 * it. It writes only well-formed text (`plain` refuses a string holding a
 * surrogate), so the string read back is the one the pieces make.
 */

const MINUS = 0x2d

/** The decimal digits of `n` (0 ≤ n < 10⁸). */
const digitCount = (n: number): number =>
  n < 10_000 ? (n < 100 ? (n < 10 ? 1 : 2) : n < 1_000 ? 3 : 4) : n < 1_000_000 ? (n < 100_000 ? 5 : 6) : n < 10_000_000 ? 7 : 8

const SURROGATE = /[\uD800-\uDFFF]/

/** UTF-8 text in a buffer grown by doubling; `done` reads it back as one string. */
export class Utf8Writer {
  private buf: Buffer
  private at = 0

  /** @param capacity the first buffer's bytes (a guess: it grows when more are written). */
  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 64))
  }

  /** Bytes written so far: a place to `again` from, or to go `back` to. */
  get length(): number {
    return this.at
  }

  /** Room for `bytes` more. */
  private room(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + bytes))
    this.buf.copy(bigger, 0, 0, this.at)
    this.buf = bigger
  }

  /** One ASCII character, by its code. */
  byte(code: number): void {
    this.room(1)
    this.buf[this.at++] = code
  }

  /** `s`, known to be ASCII. */
  ascii(s: string): void {
    this.room(s.length)
    const buf = this.buf
    for (let i = 0; i < s.length; i++) buf[this.at++] = s.charCodeAt(i)
  }

  /** Any well-formed `s` (no lone surrogate). */
  text(s: string): void {
    this.written(s, false)
  }

  /** `s` when it holds no surrogate, and true; else nothing is written, and false. */
  plain(s: string): boolean {
    return this.written(s, true)
  }

  /** ASCII a byte at a time; from the first other character, Node's UTF-8 encoder (after the check `plain` asks for). */
  private written(s: string, plain: boolean): boolean {
    this.room(s.length * 3)
    const buf = this.buf
    const start = this.at
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) {
        const tail = i === 0 ? s : s.slice(i)
        if (plain && SURROGATE.test(tail)) {
          this.at = start
          return false
        }
        this.at += buf.write(tail, this.at, "utf8")
        return true
      }
      buf[this.at++] = c
    }
    return true
  }

  /** A safe integer's decimal digits, as `${n}` writes them (other numbers as `String(n)`). */
  integer(n: number): void {
    if (!Number.isSafeInteger(n)) {
      this.ascii(String(n))
      return
    }
    this.room(17)
    if (n < 0) {
      this.buf[this.at++] = MINUS
      n = -n
    }
    if (n < 100_000_000) {
      this.digits(n, digitCount(n))
      return
    }
    // Two halves of up to 8 digits each, in int32 arithmetic: 2⁵³ < 10¹⁶.
    const high = Math.floor(n / 100_000_000)
    this.digits(high, digitCount(high))
    this.digits(n - high * 100_000_000, 8)
  }

  /** `n` (0 ≤ n < 10⁸) in `count` digits, zero-padded on the left. */
  private digits(n: number, count: number): void {
    const buf = this.buf
    let end = this.at + count
    this.at = end
    let rest = n | 0
    for (let i = 0; i < count; i++) {
      const tenth = (rest / 10) | 0
      buf[--end] = 0x30 + rest - tenth * 10
      rest = tenth
    }
  }

  /** The bytes from `from` to `to` (places `length` gave), written again at the end. */
  again(from: number, to: number): void {
    this.room(to - from)
    const buf = this.buf
    for (let i = from; i < to; i++) buf[this.at++] = buf[i]!
  }

  /** Drops what was written after `length` was `to`. */
  back(to: number): void {
    this.at = Math.min(to, this.at)
  }

  /** The text written, as one string. */
  done(): string {
    return this.buf.toString("utf8", 0, this.at)
  }
}
