/**
 * Summarises a `node --trace-gc --trace-gc-nvp` log: one line per GC with what
 * decides the young generation's size — bytes allocated since the last GC,
 * bytes that survived in the young generation and bytes promoted, and the
 * young generation's capacity after it — then the totals. V8 doubles the
 * young generation (up to its maximum) once the bytes survived since it last
 * grew exceed its capacity (Heap::ShouldResizeNewSpace), so a run whose
 * survivors are mostly long-lived state grows it whatever its garbage rate.
 *
 *   node bench/scale-sockets.ts --sessions 1000 --broker-out /tmp/gc.log \
 *     --cmd "node --trace-gc --trace-gc-nvp dist/bin/intercom.mjs broker --dir {dir} --durability memory"
 *   node bench/gc-trace.ts /tmp/gc.log
 */
import fs from "node:fs"

const file = process.argv[2]
if (file === undefined) {
  process.stderr.write("usage: node bench/gc-trace.ts <trace-gc-nvp log>\n")
  process.exit(2)
}

const mib = (bytes: number): string => (bytes / 1048576).toFixed(2)
const totals = { allocated: 0, survived: 0, promoted: 0, scavenges: 0, markCompacts: 0 }
console.log("ms        gc  allocated  survived  promoted  young capacity (MiB)")
for (const line of fs.readFileSync(file, "utf8").split("\n")) {
  const at = /\s(\d+) ms: pause=/.exec(line)
  if (at === null) continue
  const fields = new Map<string, string>()
  for (const pair of line.slice(at.index).split(" ")) {
    const eq = pair.indexOf("=")
    if (eq > 0) fields.set(pair.slice(0, eq), pair.slice(eq + 1))
  }
  const number = (name: string): number => Number(fields.get(name) ?? 0)
  const kind = fields.get("gc") ?? "?"
  totals.allocated += number("allocated")
  totals.survived += number("new_space_survived")
  totals.promoted += number("promoted")
  if (kind === "s") totals.scavenges++
  else totals.markCompacts++
  console.log(
    [at[1]!.padStart(6), kind.padStart(5), mib(number("allocated")).padStart(10), mib(number("new_space_survived")).padStart(9),
      mib(number("promoted")).padStart(9), mib(number("new_space_capacity")).padStart(9)].join(" ")
  )
}
console.log(
  `total: ${totals.scavenges} scavenges, ${totals.markCompacts} other GCs; allocated ${mib(totals.allocated)}, survived ${
    mib(totals.survived)
  }, promoted ${mib(totals.promoted)} MiB`
)
