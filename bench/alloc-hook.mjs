/**
 * Preloaded into a broker by `bench/alloc.ts` (`node --import`): on each
 * SIGUSR2 it starts, then stops, V8's sampling heap profiler — with the
 * objects the collectors freed kept in the profile, so it counts every
 * allocation, not what survived — and writes the profile to
 * `$ALLOC_PROFILE_PREFIX.<pid>.<n>.heapprofile`. A measurement aid, never
 * loaded by the broker itself.
 */
import fs from "node:fs"
import inspector from "node:inspector"

const prefix = process.env.ALLOC_PROFILE_PREFIX ?? "alloc"
const samplingInterval = Number(process.env.ALLOC_SAMPLING_INTERVAL ?? 256)
const session = new inspector.Session()
session.connect()
let sampling = false
let written = 0

process.on("SIGUSR2", () => {
  if (!sampling) {
    sampling = true
    session.post("HeapProfiler.startSampling", {
      samplingInterval,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
    return
  }
  sampling = false
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error !== null) return console.error(`alloc-hook: ${error.message}`)
    // Written aside, then renamed: bench/alloc.ts waits for the name and must never read half a file.
    const file = `${prefix}.${process.pid}.${written++}.heapprofile`
    fs.writeFileSync(`${file}.partial`, JSON.stringify(result.profile))
    fs.renameSync(`${file}.partial`, file)
  })
})
