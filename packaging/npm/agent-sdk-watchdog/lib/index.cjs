'use strict';
// `require('agent-sdk-watchdog')`: the ES module entry itself (require of an ES module, Node
// 20.19+ / 22.12+, as the reference package needs). On an older Node only the binary helpers
// of ../index.js can be required; import() still gives everything.
try {
  module.exports = require('./index.mjs');
} catch (e) {
  if (e?.code !== 'ERR_REQUIRE_ESM') throw e;
  module.exports = require('../index.js');
}
