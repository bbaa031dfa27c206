/** A Unix socket file with nothing listening on it: what a broker killed with SIGKILL leaves behind. */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"

/**
 * Creates a socket file at `socketPath` that refuses connections: a server
 * listens on `<socketPath>.live`, the file gets a second name, and the server
 * closes (which unlinks only the first name).
 */
export const staleSocketAt = (socketPath: string): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const server = net.createServer()
    const live = `${socketPath}.live`
    server.listen(live, () => {
      fs.linkSync(live, socketPath) // a second name for the socket inode survives the close
      server.close(() => resume(Effect.void))
    })
  })
