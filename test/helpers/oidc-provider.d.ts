// oidc-provider ships no types; the tests use it only through test/helpers/oidc.ts.
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}
