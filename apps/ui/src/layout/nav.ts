import type { ApiPermission } from '@carapace/models';

/** A link of the navigation bar, shown when the user holds `permission` (always when absent). */
export interface NavItem {
  label: string;
  to: string;
  permission?: ApiPermission;
  /** Matches only this exact path (the dashboard), not the paths under it. */
  end?: boolean;
}

/** The main links. */
export const MAIN_NAV: readonly NavItem[] = [
  { label: 'Dashboard', to: '/', end: true },
  { label: 'Servers', to: '/servers', permission: 'view_server' },
  { label: 'Clusters', to: '/clusters', permission: 'view_cluster' },
  { label: 'Playbook configurations', to: '/playbook-configurations', permission: 'view_playbook_configuration' },
  { label: 'Executions', to: '/executions', permission: 'view_execution' },
];

/**
 * The administration links. The cloud-config generator needs the runners' SSH public key
 * (`GET /v1/runner/`, `view_runner`); the discovery token is typed in by the operator.
 */
export const ADMIN_NAV: readonly NavItem[] = [
  { label: 'Users', to: '/admin/users', permission: 'view_user' },
  { label: 'Roles', to: '/admin/roles', permission: 'view_role' },
  { label: 'Runners', to: '/admin/runners', permission: 'view_runner' },
  { label: 'Cloud config', to: '/admin/cloud-config', permission: 'view_runner' },
];

/** The links a user may follow. */
export function visibleNav(items: readonly NavItem[], can: (permission: ApiPermission) => boolean): NavItem[] {
  return items.filter((item) => item.permission === undefined || can(item.permission));
}

/** Where the control plane serves the documentation site (`ui.docsDir`, built from docs/ by VitePress). */
export const DOCS_BASE = '/docs/';

/** A page of the documentation site. */
export interface HelpLink {
  label: string;
  href: string;
}

/** The links of the Help menu: pages of the documentation site, opened in a new tab. */
export const HELP_LINKS: readonly HelpLink[] = [
  { label: 'Operator guide', href: `${DOCS_BASE}guide/` },
  { label: 'First cluster', href: `${DOCS_BASE}guide/first-cluster` },
  { label: 'Playbook reference', href: `${DOCS_BASE}reference/playbooks` },
  { label: 'Troubleshooting', href: `${DOCS_BASE}guide/troubleshooting` },
  { label: 'CLI reference', href: `${DOCS_BASE}reference/cli` },
];

/**
 * The anchor the documentation site gives a heading: the slugify of docs/.vitepress/config.js
 * (GitHub's way) of the heading's text, code spans as their text.
 */
export function docsAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/**
 * A playbook's section of the generated playbook reference (docs/reference/playbooks.md,
 * test/docs/reference.ts): its heading is "NAME (`ID`)".
 */
export function playbookDocsHref(playbook: { id: string; name: string }): string {
  return `${DOCS_BASE}reference/playbooks#${docsAnchor(`${playbook.name} (${playbook.id})`)}`;
}
