// Preload for the conformance suite (NODE_OPTIONS="--import <abs path>/force-localhost.mjs"):
// the suite's mock servers call `listen(0)` or `app.listen(port)` without a host, which binds
// every interface. This keeps them on 127.0.0.1.
//
// Node's `Server.listen` resolves a given host asynchronously, but binds a host-less listen at
// once, and the suite reads `server.address()` right after `listen()` returns. So the host is
// not added to `listen`'s arguments; instead the bind step itself, `Server.prototype._listen2`
// (the name Node keeps so that code can wrap it), gets 127.0.0.1 for a missing or wildcard
// address. Named pipes and inherited handles or file descriptors pass through untouched.
import net from "node:net";

const WILDCARDS = new Set([undefined, null, "", "0.0.0.0", "::", "[::]"]);
const bind = net.Server.prototype._listen2;

if (typeof bind !== "function") {
  throw new Error("force-localhost: this Node has no net.Server.prototype._listen2 to wrap");
}

net.Server.prototype._listen2 = function (address, port, addressType, backlog, fd, flags) {
  const tcp = typeof port === "number" && port >= 0 && !(typeof fd === "number" && fd >= 0);
  if (tcp && WILDCARDS.has(address)) {
    return bind.call(this, "127.0.0.1", port, 4, backlog, fd, flags);
  }
  return bind.call(this, address, port, addressType, backlog, fd, flags);
};
