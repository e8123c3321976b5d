// A tiny npm registry for tests: serves the packument and the tarball of
// each package tarball named on the command line (made with `npm pack`), on
// $REGISTRY_ADDR (default 127.0.0.1) at an ephemeral port (or
// $REGISTRY_PORT). Prints the port on stdout, then writes one line per
// request to $REGISTRY_LOG when set, so a test can tell whether npm fetched
// a tarball or took it from its cache.
// Usage: node npm-registry.mjs pkg-1.0.0.tgz [...]
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { execFileSync } from "node:child_process";

const packages = new Map();
for (const file of process.argv.slice(2)) {
    const data = fs.readFileSync(file);
    const manifest = JSON.parse(execFileSync("tar", ["-xzOf", file, "package/package.json"], { encoding: "utf8" }));
    const base = path.basename(file);
    const entry = packages.get(manifest.name) ?? { name: manifest.name, versions: {}, files: new Map() };
    entry.versions[manifest.version] = {
        ...manifest,
        _id: `${manifest.name}@${manifest.version}`,
        dist: {
            shasum: crypto.createHash("sha1").update(data).digest("hex"),
            integrity: "sha512-" + crypto.createHash("sha512").update(data).digest("base64"),
            tarball: null, // filled per request with the host the client used
            file: base,
        },
    };
    entry.latest = manifest.version;
    entry.files.set(base, data);
    packages.set(manifest.name, entry);
}

const log = process.env.REGISTRY_LOG;
const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split("?")[0]);
    if (log) fs.appendFileSync(log, `${req.method} ${url}\n`);
    const host = req.headers.host;
    const tar = url.match(/^\/(.+)\/-\/([^/]+\.tgz)$/);
    if (tar && packages.get(tar[1])?.files.has(tar[2])) {
        const data = packages.get(tar[1]).files.get(tar[2]);
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": data.length });
        return res.end(data);
    }
    const entry = packages.get(url.slice(1));
    if (!entry) {
        res.writeHead(404, { "content-type": "application/json" });
        return res.end('{"error":"not found"}');
    }
    const versions = {};
    for (const [v, m] of Object.entries(entry.versions))
        versions[v] = { ...m, dist: { shasum: m.dist.shasum, integrity: m.dist.integrity, tarball: `http://${host}/${entry.name}/-/${m.dist.file}` } };
    const body = JSON.stringify({ name: entry.name, "dist-tags": { latest: entry.latest }, versions });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(body);
});
server.listen(Number(process.env.REGISTRY_PORT || 0), process.env.REGISTRY_ADDR || "127.0.0.1", () => {
    console.log(server.address().port);
});
