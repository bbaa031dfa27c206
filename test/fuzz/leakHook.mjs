// A fault hook for test/fuzz/memory.test.ts, preloaded into the broker process under test
// (`runCampaign`'s `brokerImports`): the broker keeps 256 KiB for every chunk any socket
// reads, up to 128 MiB — a leak of what it is sent, as a per-frame leak in the broker would be,
// big enough per chunk that a campaign of a few hundred frames shows it.
import * as net from "node:net"

const CHUNK_LEAK = 256 * 1024
const LEAK_LIMIT = 128 * 1024 * 1024

const kept = []
let total = 0
const emit = net.Socket.prototype.emit
net.Socket.prototype.emit = function(event, ...args) {
  if (event === "data" && total < LEAK_LIMIT) {
    kept.push(Buffer.alloc(CHUNK_LEAK, 1))
    total += CHUNK_LEAK
  }
  return emit.call(this, event, ...args)
}
