export default { main: 1 };
