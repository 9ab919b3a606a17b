import { defineConfig } from 'vitepress';

/**
 * Anchors as GitHub makes them, so that a link works on both the site and the repository.
 * @param {string} text
 */
function slugify(text) {
  return text
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

// The site of docs/ (npm run docs:build). Links that leave docs/ (the packages' READMEs, deploy/)
// point into the repository: they are not pages of the site, so they are not checked here.
export default defineConfig({
  // Served by the control plane at /docs/ (ui.docsDir), beside the web UI at /.
  base: '/docs/',
  title: 'Carapace',
  description: 'Deploys and operates Ceph storage clusters by running Ansible playbooks against servers.',
  lang: 'en',
  cleanUrls: true,
  lastUpdated: false,
  ignoreDeadLinks: [/^\.\/(\.\.\/){2,}/],
  markdown: { anchor: { slugify } },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/' },
      { text: 'Playbooks', link: '/reference/playbooks' },
      { text: 'CLI', link: '/reference/cli' },
    ],
    sidebar: [
      {
        text: 'Operator guide',
        items: [
          { text: 'Overview', link: '/guide/' },
          { text: 'Install', link: '/guide/install' },
          { text: 'First cluster', link: '/guide/first-cluster' },
          { text: 'Playbooks', link: '/guide/playbooks' },
          { text: 'Preview and relaunch', link: '/guide/preview-runs' },
          { text: 'Runners', link: '/guide/runners' },
          { text: 'PostgreSQL and replicas', link: '/guide/postgres' },
          { text: 'Configuration', link: '/guide/configuration' },
          { text: 'Backups and secrets', link: '/guide/backups' },
          { text: 'Upgrading Carapace', link: '/guide/upgrading' },
          { text: 'Security model', link: '/guide/security' },
          { text: 'Monitoring', link: '/guide/monitoring' },
          { text: 'Troubleshooting', link: '/guide/troubleshooting' },
        ],
      },
      {
        text: 'Reference (generated)',
        items: [
          { text: 'Playbooks', link: '/reference/playbooks' },
          { text: 'CLI', link: '/reference/cli' },
        ],
      },
      {
        text: 'Day 2 design notes',
        items: [
          { text: 'Upgrade and restart', link: '/day2/upgrade-and-restart' },
          { text: 'Repairs', link: '/day2/repairs' },
          { text: 'Pools', link: '/day2/pools' },
          { text: 'Research', link: '/day2/repairs-research' },
        ],
      },
      {
        text: 'Decisions and development',
        items: [
          { text: 'API decisions', link: '/decisions/api' },
          { text: 'The test suite', link: '/development/testing' },
        ],
      },
    ],
    search: { provider: 'local' },
  },
});
