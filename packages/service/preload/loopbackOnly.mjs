// Loaded into the local bundler's process (node --import, src/local/bundler.ts): every TCP server and UDP
// socket of that process binds 127.0.0.1, whatever host it asks for. Alto listens on "0.0.0.0" and has no
// option to change that; the local stack must not be reachable from other machines. And the bundler exits when
// the process that started it goes away, even killed.
import dgram from "node:dgram";
import net from "node:net";

const LOOPBACK = "127.0.0.1";
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const [first] = args;
  if (first !== null && typeof first === "object") {
    if (first.handle !== undefined || first.fd !== undefined || first._handle !== undefined) {
      throw new Error("loopbackOnly: listening on an inherited handle is refused");
    }
    // {path} is a Unix socket: no network address.
    if (first.path === undefined) args[0] = { ...first, host: LOOPBACK, ipv6Only: false };
  } else if (args.length === 0 || typeof first === "function") {
    args.unshift(0, LOOPBACK);
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] === "string") args[1] = LOOPBACK;
    else args.splice(1, 0, LOOPBACK);
  }
  return listen.apply(this, args);
};

const bind = dgram.Socket.prototype.bind;
dgram.Socket.prototype.bind = function bindOnLoopback(...args) {
  const [first] = args;
  if (first !== null && typeof first === "object") args[0] = { ...first, address: LOOPBACK };
  else if (args.length === 0 || typeof first === "function") args.unshift(0, LOOPBACK);
  else if (typeof args[1] === "string") args[1] = LOOPBACK;
  else args.splice(1, 0, LOOPBACK);
  return bind.apply(this, args);
};

if (process.env.PAYMASTER_BUNDLER_EXIT_WITH_PARENT === "1") {
  // Orphaned (the parent died, however): the process is handed to another parent. (Not stdin's end: alto ends up
  // closing its own stdin while it runs.)
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(0);
  }, 250).unref();
}
