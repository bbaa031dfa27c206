/**
 * Baseline for the benchmark: the least a relay has to do for the bench
 * workloads. Framing + JSON.parse + Map lookup + forward; no validation, no
 * mailbox, no ask edges, no replay records, no rate limit.
 *
 *   node bench/raw-relay.ts <socketPath>
 *
 * Prints `raw relay ready (pid: N)` on stdout once listening. SIGTERM/SIGINT
 * close the server and unlink the socket.
 *
 * Protocol subset (pi-intercom v1 shapes): register → registered (+
 * session_joined to the others of the same scope), send → message to the
 * exact target id (with brokerReceivedAt/brokerDeliveredAt) + delivered to
 * the sender, list → sessions, health → health_ok, session_left on close.
 * Writes are corked per incoming chunk, so frames produced while handling one
 * chunk leave in one syscall per destination.
 */
import { randomUUID } from "node:crypto"
import fs from "node:fs"
import net from "node:net"
import path from "node:path"
import { encodeText, FrameSplitter, getRecord, getString, parsePayload } from "./framing.ts"

interface Conn {
  readonly socket: net.Socket
  id: string | undefined
  scope: string
  infoJson: string
}

const socketPath = process.argv[2]
if (socketPath === undefined || socketPath === "") {
  process.stderr.write("usage: node bench/raw-relay.ts <socketPath>\n")
  process.exit(2)
}

/** scope ("" = unscoped) → session id → connection, in registration order. */
const scopes = new Map<string, Map<string, Conn>>()
const corked = new Set<net.Socket>()

const out = (socket: net.Socket, frame: Buffer): void => {
  if (socket.destroyed) return
  if (!corked.has(socket)) {
    socket.cork()
    corked.add(socket)
  }
  socket.write(frame)
}

const flush = (): void => {
  for (const s of corked) s.uncork()
  corked.clear()
}

const membersOf = (scope: string): Map<string, Conn> => {
  let m = scopes.get(scope)
  if (m === undefined) {
    m = new Map()
    scopes.set(scope, m)
  }
  return m
}

const broadcast = (conn: Conn, frame: Buffer): void => {
  const members = scopes.get(conn.scope)
  if (members === undefined) return
  for (const other of members.values()) if (other !== conn) out(other.socket, frame)
}

const onRegister = (conn: Conn, frame: Record<string, unknown>): void => {
  const reg = getRecord(frame, "session") ?? {}
  const id = getString(frame, "sessionId") ?? randomUUID()
  const scope = (getString(frame, "scopeId") ?? "").trim()
  const info: Record<string, unknown> = {
    id,
    name: reg["name"],
    cwd: reg["cwd"],
    model: reg["model"],
    pid: reg["pid"],
    startedAt: reg["startedAt"],
    lastActivity: reg["lastActivity"],
    endpointEpoch: randomUUID(),
    trustedLocal: true
  }
  conn.id = id
  conn.scope = scope
  conn.infoJson = JSON.stringify(info)
  const members = membersOf(scope)
  const previous = members.get(id)
  if (previous !== undefined) {
    // Stable-id takeover: the new connection owns the key.
    members.delete(id)
    previous.id = undefined
    previous.socket.end()
  }
  members.set(id, conn)
  out(conn.socket, encodeText(`{"type":"registered","sessionId":${JSON.stringify(id)}}`))
  broadcast(conn, encodeText(`{"type":"session_joined","session":${conn.infoJson}}`))
}

const onSend = (conn: Conn, frame: Record<string, unknown>): void => {
  const message = getRecord(frame, "message")
  const messageId = message === undefined ? "unknown" : getString(message, "id") ?? "unknown"
  const to = getString(frame, "to") ?? ""
  const target = scopes.get(conn.scope)?.get(to)
  if (message === undefined || target === undefined) {
    out(
      conn.socket,
      encodeText(JSON.stringify({
        type: "delivery_failed",
        messageId,
        reason: "Session not found",
        delivery: "failed",
        code: "E_TARGET_NOT_FOUND",
        retryable: false,
        outcomeKnown: true
      }))
    )
    return
  }
  const now = Date.now()
  message["brokerReceivedAt"] = now
  message["brokerDeliveredAt"] = now
  out(target.socket, encodeText(`{"type":"message","from":${conn.infoJson},"message":${JSON.stringify(message)}}`))
  out(
    conn.socket,
    encodeText(
      `{"type":"delivered","messageId":${
        JSON.stringify(messageId)
      },"delivery":"socket_delivered","retryable":false,"outcomeKnown":true}`
    )
  )
}

const onFrame = (conn: Conn, frame: Record<string, unknown>): boolean => {
  switch (frame["type"]) {
    case "send":
      if (conn.id === undefined) return false
      onSend(conn, frame)
      return true
    case "register":
      if (conn.id !== undefined) return false
      onRegister(conn, frame)
      return true
    case "list": {
      if (conn.id === undefined) return false
      const members = scopes.get(conn.scope)
      const infos: Array<string> = []
      if (members !== undefined) for (const m of members.values()) infos.push(m.infoJson)
      out(
        conn.socket,
        encodeText(`{"type":"sessions","requestId":${JSON.stringify(frame["requestId"] ?? "")},"sessions":[${
          infos.join(",")
        }]}`)
      )
      return true
    }
    case "health":
      out(
        conn.socket,
        encodeText(`{"type":"health_ok","requestId":${
          JSON.stringify(frame["requestId"] ?? "")
        },"protocol":"pi-intercom","version":1}`)
      )
      return true
    case "unregister":
      leave(conn)
      return true
    case "presence":
      return true
    default:
      return false
  }
}

const leave = (conn: Conn): void => {
  const id = conn.id
  if (id === undefined) return
  conn.id = undefined
  const members = scopes.get(conn.scope)
  if (members === undefined || members.get(id) !== conn) return
  members.delete(id)
  if (members.size === 0) scopes.delete(conn.scope)
  const frame = encodeText(`{"type":"session_left","sessionId":${JSON.stringify(id)}}`)
  if (members.size > 0) for (const other of members.values()) out(other.socket, frame)
}

const server = net.createServer((socket) => {
  const conn: Conn = { socket, id: undefined, scope: "", infoJson: "" }
  let bad = false
  const splitter = new FrameSplitter((buf, start, end) => {
    if (bad) return
    const frame = parsePayload(buf, start, end)
    if (frame === undefined || !onFrame(conn, frame)) bad = true
  })
  socket.on("data", (chunk: Buffer) => {
    const fine = splitter.push(chunk)
    flush()
    if (!fine || bad) socket.destroy()
  })
  socket.on("error", () => {})
  socket.on("close", () => {
    leave(conn)
    flush()
  })
})

fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 })
try {
  fs.unlinkSync(socketPath)
} catch {
  // no stale socket
}

const shutdown = (): void => {
  server.close()
  try {
    fs.unlinkSync(socketPath)
  } catch {
    // already gone
  }
  process.exit(0)
}
process.on("SIGTERM", shutdown)
process.on("SIGINT", shutdown)

server.listen(socketPath, () => {
  process.stdout.write(`raw relay ready (pid: ${process.pid})\n`)
})
