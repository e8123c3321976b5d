// TAP for the end-to-end tests under Node (tests/e2e/*.mjs): numbered
// checks on stdout, the plan at the end, the exit status. A test imports it
// as "../lib/tap.mjs" (resolved against the test file, so it works from the
// source tree and from the unprivileged run's copy of tests/ alike).
//
//     ok(cond, "what is checked", diag);   // `not ok N - ...` and diag as `#` lines
//     done();                              // `1..N`; exits 1 if any check failed

// The number of checks so far: a live binding, read it as `n` after
// importing it.
export let n = 0;
let failed = 0;
// How a failed check's diag is printed: "lines" (a string as it is, anything
// else as JSON, one `#` line per line) or "json" (JSON.stringify on one
// line, control characters escaped).
let diagFormat = "lines";
export function diagAs(format) {
    diagFormat = format;
}

export function ok(cond, name, diag) {
    n++;
    console.log(`${cond ? "ok" : "not ok"} ${n} - ${name}`);
    if (!cond) {
        failed++;
        if (diag !== undefined) {
            const out = diagFormat === "json" ? String(JSON.stringify(diag))
                : String(typeof diag === "string" ? diag : JSON.stringify(diag));
            for (const line of out.split("\n")) console.log(`#   ${line}`);
        }
    }
    return cond;
}

export function skip(name, why) {
    n++;
    console.log(`ok ${n} - ${name} # SKIP ${why}`);
}

// The whole test skipped (before any check): `1..0 # SKIP why`.
export function skipAll(why) {
    console.log(`1..0 # SKIP ${why}`);
    process.exit(0);
}

export function done() {
    console.log(`1..${n}`);
    process.exit(failed ? 1 : 0);
}
