/**
 * `npm run fuzz -- [options]`: one fuzz campaign against a real broker, its
 * summary printed (docs/testing.md, "The fuzzer"; `--help` lists the flags):
 *
 *   --seed S        the campaign's seed (default: drawn from the clock, printed)
 *   --frames N      frames the attackers send in all (default 20000)
 *   --bytes N       bytes they send in all (default 2 KiB a frame)
 *   --attackers N   attackers at once (default 8)
 *   --minutes M     end the attack phase after M minutes, frames left or not
 *   --in-process    run the broker in this process (no memory measurements)
 *   --light         light floods (the CI campaign's setting)
 *   --only K,…      only these attack kinds or categories
 *   --tolerate K,…  finding kinds that do not fail the run ("known": the known findings)
 *   --run-limit-ms N, --hung-after-ms N, --final-round-trips-ms N, --memory-report-ms N
 *                   the campaign's timeouts (`CAMPAIGN_TIMEOUTS`), each from 1 ms up
 *
 * Exits 0 when every promise held (apart from tolerated findings), 1 when
 * one broke — the summary then ends with the command that replays the run —
 * 2 on a bad command line (an unknown attack or finding name included), and
 * 128 + the signal when one ended it first: 130 for Ctrl-C (SIGINT), 143 for
 * SIGTERM (a CI job's timeout, `kill`).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Clock from "effect/Clock"
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { EXIT_FAILURE, ExitCode } from "../cli/exit.ts"
import { packageInfo } from "../config/install.ts"
import { runCampaign } from "./Campaign.ts"
import { fuzzCommand, type FuzzRequest, fuzzTeardown, runFuzzMain } from "./fuzzCommand.ts"
import { formatReport } from "./Report.ts"

const runRequest = (request: FuzzRequest) =>
  Effect.gen(function*() {
    const seed = request.seed ?? (yield* Clock.currentTimeMillis) % 1_000_000
    yield* Console.log(`fuzz: seed ${seed}, ${request.campaign.frames} frames, ${request.campaign.mode} broker`)
    const report = yield* runCampaign({
      ...request.campaign,
      seed,
      progress: (line) => Console.error(`  … ${line}`)
    })
    yield* Console.log(formatReport(report))
    if (!report.ok) return yield* new ExitCode({ code: EXIT_FAILURE })
  }).pipe(
    Effect.catchTag("BrokerTrouble", (error) => Console.error(error.message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))))
  )

fuzzCommand(runRequest).pipe(
  Command.run({ version: packageInfo()?.version ?? "unknown" }),
  Effect.provide(NodeServices.layer),
  runFuzzMain({ teardown: fuzzTeardown })
)
