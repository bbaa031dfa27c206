/**
 * A connected pair of raw Node sockets over a fresh Unix socket path, for
 * tests of the transport's adapter (`fromNetSocket`) against a peer the test
 * drives by hand (pausing it, reading from it, destroying it). Closed with
 * the scope.
 */
import { Effect } from "effect"
import * as net from "node:net"

/** The listener's side (`server`), the dialer's side (`client`) and the listener itself. */
export interface SocketPair {
  readonly server: net.Socket
  readonly client: net.Socket
  readonly listener: net.Server
}

/** Listens on `socketPath`, dials it, and yields both ends once the listener has accepted. */
export const socketPair = (socketPath: string) =>
  Effect.acquireRelease(
    Effect.callback<SocketPair>((resume) => {
      let client: net.Socket
      const listener = net.createServer((server) => resume(Effect.succeed({ server, client, listener })))
      listener.listen(socketPath, () => {
        client = net.createConnection({ path: socketPath })
      })
    }),
    ({ client, listener, server }) =>
      Effect.sync(() => {
        client.destroy()
        server.destroy()
        listener.close()
      })
  )
