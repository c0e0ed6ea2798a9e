// The docs site (`npm run docs:build`): VitePress over docs/. Dead links fail the build (VitePress's
// default, kept); search is VitePress's local index, so the build needs no network.
import { defineConfig } from 'vitepress';
import { githubSlug } from '../../scripts/docs-slug.ts';

export default defineConfig({
  title: 'Vigil',
  description: 'Self-hostable observability and approval gate for AI agents',
  cleanUrls: true,
  // Anchors as GitHub makes them, so one link works on both (code comments cite `docs/audit.md#--deep`).
  markdown: { anchor: { slugify: githubSlug } },
  lastUpdated: false,
  ignoreDeadLinks: [
    // The services on this machine (http://localhost:3400/ …), which the guides tell the reader to open.
    /^https?:\/\/(localhost|127\.0\.0\.1)[:/]/,
  ],
  themeConfig: {
    search: { provider: 'local' },
    nav: [
      { text: 'Guides', link: '/guide/quick-start' },
      { text: 'Reference', link: '/reference/' },
      { text: 'Architecture', link: '/architecture' },
      { text: 'Decisions', link: '/decisions/' },
    ],
    sidebar: [
      {
        text: 'Guides',
        items: [
          { text: 'Quick start', link: '/guide/quick-start' },
          { text: 'A first session and an approval, with curl', link: '/guide/curl' },
          { text: 'TypeScript SDK', link: '/guide/sdk' },
          { text: 'The gate for the OpenAI Agents SDK', link: '/guide/openai-agents' },
          { text: 'The gate for LangGraph.js', link: '/guide/langgraph' },
          { text: 'Vercel AI SDK and Mastra approvals', link: '/guide/framework-approvals' },
          { text: 'OpenTelemetry (OTLP)', link: '/guide/opentelemetry' },
          { text: 'Dashboard', link: '/guide/dashboard' },
          { text: 'Observe keys and scopes', link: '/guide/observe-keys' },
          { text: 'Live stream', link: '/guide/live-stream' },
          { text: 'MCP server', link: '/guide/mcp' },
          { text: 'Claude Code and the Agent SDK', link: '/guide/claude-code' },
          { text: 'MCP gateway', link: '/guide/mcp-gateway' },
          { text: 'CI gate (eval-gate)', link: '/guide/eval-gate' },
          { text: 'Approvals from Slack and Discord', link: '/chat' },
          { text: 'Approval receipts', link: '/guide/receipts' },
          { text: 'Time-limited grants', link: '/guide/grants' },
          { text: 'Budgets', link: '/guide/budgets' },
          { text: 'Receiving gate webhooks', link: '/webhooks' },
          { text: 'Audit and verification', link: '/audit' },
          { text: 'Deploying', link: '/deploy' },
          { text: 'PostgreSQL', link: '/guide/postgresql' },
          { text: 'Scaling out on PostgreSQL', link: '/scale' },
          { text: 'Behaviour in detail', link: '/guide/behaviour' },
          { text: 'The API: conventions and routes', link: '/api' },
          { text: 'Development: layout, tests, bench', link: '/guide/development' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'Overview', link: '/reference/' },
          { text: 'HTTP API (generated)', link: '/reference/api' },
          { text: 'Configuration (generated)', link: '/reference/configuration' },
          { text: 'CLI (generated)', link: '/reference/cli' },
          { text: 'Error codes', link: '/reference/errors' },
          { text: 'Numeric bounds', link: '/reference/numeric-bounds' },
          { text: 'OpenAPI lint', link: '/openapi-lint' },
        ],
      },
      {
        text: 'Project',
        items: [
          { text: 'Architecture', link: '/architecture' },
          { text: 'Decision records', link: '/decisions/' },
        ],
      },
    ],
  },
});
