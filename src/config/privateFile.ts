/**
 * Files only this user may read and write (mode 0600), whatever was at the
 * path before. `open(…, mode)` applies its mode only when it creates the
 * file, so a leftover file — an older run's `broker.pid`, say, or a
 * `broker.log` someone created 0644 — would keep its looser mode; these set
 * it on the open descriptor (fchmod), which neither the umask nor a
 * previous file changes.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Opens `file` with mode 0600 — for writing, truncated (`"w"`, the default),
 * or for appending (`"a"`; `"a+"` also reads); returns the descriptor.
 * Throws what `fs` throws.
 */
export const openPrivateSync = (file: string, flags: "w" | "a" | "a+" = "w"): number => {
  const fd = fs.openSync(file, flags, 0o600)
  try {
    fs.fchmodSync(fd, 0o600)
    return fd
  } catch (error) {
    fs.closeSync(fd)
    throw error
  }
}

/**
 * Replaces `file` with `text`, mode 0600, through a temp file and a rename:
 * a reader sees the old content or the new, never a partial file, and the
 * new file's mode never depends on the old one's. With `sync`, the new
 * content is on disk before the rename, so a power loss leaves the old
 * content or the new (for a journal; a pid file, rewritten at every start,
 * does without the wait). Throws what `fs` throws.
 */
export const writePrivateFileSync = (file: string, text: string, options: { readonly sync?: boolean } = {}): void => {
  const temp = `${file}.${process.pid}.tmp`
  try {
    const fd = openPrivateSync(temp)
    try {
      fs.writeFileSync(fd, text)
      if (options.sync === true) fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(temp, file)
  } catch (error) {
    fs.rmSync(temp, { force: true })
    throw error
  }
}

/**
 * Appends `text` to the log `file`, creating it (mode 0600) and its
 * directory (mode 0700) when missing. A log's first append in a process
 * (`first`) also sets the directory's mode and ends a torn last line (a
 * crash mid-append) before it writes, so that the new line is not joined to
 * it. Returns the file's size before and after the append (a writer that
 * knows what it wrote last can tell that someone else wrote between). Throws
 * what `fs` throws.
 */
export const appendPrivateLogSync = (
  file: string,
  text: string,
  first: boolean
): { readonly sizeBefore: number; readonly sizeAfter: number } => {
  const dir = path.dirname(file)
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  if (first) fs.chmodSync(dir, 0o700)
  const fd = openPrivateSync(file, first ? "a+" : "a")
  try {
    const sizeBefore = fs.fstatSync(fd).size
    const bytes = Buffer.from(first && !endsWithNewline(fd, sizeBefore) ? `\n${text}` : text, "utf8")
    // A short write (a full disk part-way) would leave a torn line that the next line joins: write it all, or throw.
    for (let written = 0; written < bytes.length;) {
      written += fs.writeSync(fd, bytes, written, bytes.length - written)
    }
    return { sizeBefore, sizeAfter: fs.fstatSync(fd).size }
  } finally {
    fs.closeSync(fd)
  }
}

/** Whether `fd`'s file, of `size` bytes, is empty or ends with a newline. */
const endsWithNewline = (fd: number, size: number): boolean => {
  if (size === 0) return true
  const last = Buffer.alloc(1)
  fs.readSync(fd, last, 0, 1, size - 1)
  return last[0] === 0x0a
}

/** What `read` returns, or `none` when the file it reads does not exist. Throws what `fs` throws otherwise. */
const ifExists = <A>(read: () => A, none: A): A => {
  try {
    return read()
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return none
    throw error
  }
}

/** `file`'s bytes, or none when there is no such file. Throws what `fs` throws otherwise. */
export const readBytesIfAnySync = (file: string): Buffer => ifExists(() => fs.readFileSync(file), Buffer.alloc(0))

/** `file`'s text, or `""` when there is no such file. Throws what `fs` throws otherwise. */
export const readFileIfAnySync = (file: string): string => readBytesIfAnySync(file).toString("utf8")

/** `file`'s size in bytes, or 0 when there is no such file. Throws what `fs` throws otherwise. */
export const sizeIfAnySync = (file: string): number => ifExists(() => fs.statSync(file).size, 0)
