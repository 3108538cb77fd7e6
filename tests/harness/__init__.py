"""What the tests (and benchmarks/) use to run the real thing: `processes` (a test's
processes, stopped by process group), `serve` (`cfarena serve` on port 0 and dial-in
bots), `postgres` (throwaway clusters, a migrated template), `ports` (a free port
for what cannot report its own), `sandboxes` (a run's sandboxed processes, told
apart from other runs'), `slow_bots` (a bundled bot's moves after a pause, for tests
that act while a match is in play) and `usage` (where the suite's wall and CPU time
go)."""
