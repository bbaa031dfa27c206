/**
 * Files only this user may read and write (mode 0600), whatever was at the
 * path before. `open(…, mode)` applies its mode only when it creates the
 * file, so a leftover file — an older run's `broker.pid`, say, or a
 * `broker.log` someone created 0644 — would keep its looser mode; these set
 * it on the open descriptor (fchmod), which neither the umask nor a
 * previous file changes.
 */
import * as fs from "node:fs"

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
 * new file's mode never depends on the old one's. Throws what `fs` throws.
 */
export const writePrivateFileSync = (file: string, text: string): void => {
  const temp = `${file}.${process.pid}.tmp`
  try {
    const fd = openPrivateSync(temp)
    try {
      fs.writeFileSync(fd, text)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(temp, file)
  } catch (error) {
    fs.rmSync(temp, { force: true })
    throw error
  }
}
