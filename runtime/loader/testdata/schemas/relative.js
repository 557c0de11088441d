const { review } = require("./lib/schemas/review.ts");
module.exports = () => review;
