'use strict';
// Preload for test servers: `node --require <this file> server.js`, or
// NODE_OPTIONS='--require "<this file>"'. Many example MCP servers call
// listen(PORT) with no host, which binds every interface. This patch makes
// a listen that gives a port (or nothing) but no host bind 127.0.0.1, so a
// test never exposes a server to the network. A listen that names a host,
// a Unix socket path or a handle is left alone.
//
// A port-only listen binds at once, so code may read server.address()
// right after calling listen(). With a host, Node first resolves it with
// dns.lookup, which answers later even for an IP literal. To keep the
// port-only timing, the host this patch adds is resolved on the spot.
const net = require('node:net');
const dns = require('node:dns');

const LOOPBACK = '127.0.0.1';
const originalListen = net.Server.prototype.listen;

function isPort(v) {
  return typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
}

// withLoopbackLookup runs fn while dns.lookup answers LOOPBACK itself,
// synchronously, in both shapes Node's listen asks for (Node 20 wants one
// address, Node 22 asks with {all: true}).
function withLoopbackLookup(fn) {
  const originalLookup = dns.lookup;
  dns.lookup = function lookup(host, options, callback) {
    if (typeof options === 'function') {
      callback = options;
      options = {};
    }
    if (host !== LOOPBACK) {
      return originalLookup.apply(this, arguments);
    }
    if (options && options.all) {
      callback(null, [{ address: LOOPBACK, family: 4 }]);
    } else {
      callback(null, LOOPBACK, 4);
    }
    return {};
  };
  try {
    return fn();
  } finally {
    dns.lookup = originalLookup;
  }
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const first = args[0];
  if (args.length === 0 || typeof first === 'function') {
    // listen() or listen(callback): a random port.
    args.unshift(0, LOOPBACK);
  } else if (isPort(first)) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === 'string') {
      return originalListen.apply(this, args);
    }
    args.splice(1, 0, LOOPBACK);
  } else if (first !== null && typeof first === 'object' &&
      first.path === undefined && first.handle === undefined &&
      first.fd === undefined && first._handle === undefined &&
      first.host === undefined) {
    // listen({port, ...})
    args[0] = { ...first, host: LOOPBACK };
  } else {
    return originalListen.apply(this, args);
  }
  return withLoopbackLookup(() => originalListen.apply(this, args));
};
