const fs = require("/etc/passwd");
module.exports = () => fs;
