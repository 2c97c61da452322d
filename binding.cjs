// Loads the native addon through node-gyp-build, which looks in build/Release (a local
// build) first, then in prebuilds/<platform>-<arch>/ (the package's prebuild).
module.exports = require('node-gyp-build')(__dirname);
