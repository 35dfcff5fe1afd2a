// `import text from './programs/x.sh?raw'`: the file's text, inlined at build time (tsup:
// scripts/tsup-raw-text.mjs; Vitest: Vite's own `?raw`).
declare module '*?raw' {
  const text: string;
  export default text;
}
