// Loads the native addon: a matching prebuild from prebuilds/, else build/Release.
module.exports = require('node-gyp-build')(__dirname);
