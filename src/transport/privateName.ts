/**
 * The private name a Unix listener binds before it links its real path to
 * the socket (UnixSocket.ts, `serveUnix`). libuv unlinks the name a server
 * bound when it closes, by name, whatever file is there by then; bound at a
 * name no other process uses, that unlink can never take a file another
 * process put at the real path. The listener removes the private name again
 * in the same synchronous step, so it is never seen in the directory; the
 * kernel goes on reporting it as the socket's address (in /proc/net/unix,
 * `ss -x`, lsof), which is how `intercom broker stop` tells the broker's
 * socket (cli/processes.ts).
 *
 * Not exported from the package: the name is an implementation detail that
 * this module keeps in one place for the listener and the lookup.
 */
import { createHash } from "node:crypto"
import * as path from "node:path"

/**
 * `<dir of socketPath>/.<pid in base 36>.<first 4 hex of sha256(file name)>`:
 * beside the real path (a hard link needs the same file system), unique to
 * the process (no two live processes share a pid) and telling which real
 * path it serves. At most 11 bytes of file name (`broker.sock` is 11), so it
 * fits in a socket address wherever a real path with as long a file name does.
 */
export const privateSocketPath = (socketPath: string, pid: number): string =>
  path.join(path.dirname(socketPath), `.${pid.toString(36)}.${tagOf(socketPath)}`)

/**
 * Tells the private names of `socketPath`, for any pid: given a bound
 * socket's address (as /proc/net/unix lists it), whether that socket serves
 * `socketPath`, whichever process holds it.
 */
export const privateSocketPathMatcher = (socketPath: string): (address: string) => boolean => {
  const dir = path.dirname(socketPath)
  const name = new RegExp(`^\\.[0-9a-z]+\\.${tagOf(socketPath)}$`)
  return (address) => path.dirname(address) === dir && name.test(path.basename(address))
}

const tagOf = (socketPath: string): string =>
  createHash("sha256").update(path.basename(socketPath), "utf8").digest("hex").slice(0, 4)
