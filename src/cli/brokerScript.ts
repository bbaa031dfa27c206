/**
 * The broker script: what a configured `brokerCommand` runs (C-CFG-4,
 * `<brokerCommand> ...brokerArgs <broker script>`). pi-intercom's spawner
 * appends the path of a script that *is* a broker; ours appends this one, so
 * that `{ "brokerCommand": "bun" }` or `{ "brokerCommand": "npx",
 * "brokerArgs": ["tsx"] }` starts a broker, as in pi-intercom, instead of
 * running the `intercom` executable with no subcommand (its usage, exit 2).
 *
 * It runs `intercom broker` for the agent dir its environment names
 * (`ATOMIC_CODING_AGENT_DIR`, then `PI_CODING_AGENT_DIR`: the spawner sets
 * both), and ignores whatever follows it on the command line (a wrapper may
 * add its own words). Its bundle is dist/bin/intercom-broker.mjs, which loads
 * the executable's own bundle (rolldown.config.ts); tsc's dist/cli/brokerScript.js
 * loads dist/cli/main.js.
 */

// Replaced before main.ts is loaded (a dynamic import: a static one would run first), which reads it once, at load.
process.argv.splice(2, process.argv.length - 2, "broker")
await import("./main.ts")
