import { AppShell, Burger, Button, Center, Group, Loader, Menu, NavLink, ScrollArea, Text, Title, VisuallyHidden } from '@mantine/core';
import { useDisclosure, useMediaQuery } from '@mantine/hooks';
import { Suspense, useEffect } from 'react';
import { Link, Outlet, useLocation } from 'react-router';
import { useSession } from '../api/session.tsx';
import { ADMIN_NAV, HELP_LINKS, MAIN_NAV, visibleNav, type NavItem } from './nav.ts';

function isActive(item: NavItem, pathname: string): boolean {
  if (item.end) return pathname === item.to;
  return pathname === item.to || pathname.startsWith(`${item.to}/`);
}

function NavLinks({ items, pathname }: { items: NavItem[]; pathname: string }) {
  return items.map((item) => {
    const active = isActive(item, pathname);
    return <NavLink key={item.to} component={Link} to={item.to} label={item.label} active={active} aria-current={active ? 'page' : undefined} />;
  });
}

/** The Help menu of the header: pages of the documentation site (served at /docs/), each in a new tab. */
function HelpMenu() {
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        <Button variant="subtle" size="xs">
          Help
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>Documentation (new tab)</Menu.Label>
        {HELP_LINKS.map((link) => (
          <Menu.Item key={link.href} component="a" href={link.href} target="_blank" rel="noopener">
            {link.label}
          </Menu.Item>
        ))}
      </Menu.Dropdown>
    </Menu>
  );
}

/** The application frame: header (Help, login, Sign out), navigation by permission, and the page. */
export function Shell() {
  const { user, can, signOut } = useSession();
  const [opened, { toggle, close }] = useDisclosure(false);
  const { pathname } = useLocation();
  const main = visibleNav(MAIN_NAV, can);
  const admin = visibleNav(ADMIN_NAV, can);

  // On a narrow window the menu closes once a link is followed.
  useEffect(() => close(), [pathname, close]);
  // Below the breakpoint (sm, 48em) a closed menu is only moved out of view: hidden, its links
  // leave the tab order and the accessibility tree too.
  const narrow = useMediaQuery('(max-width: 47.99em)');
  const hidden = !!narrow && !opened;

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 240, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label={opened ? 'Close navigation' : 'Open navigation'} />
            <Title order={1} size="h3">
              <Link to="/" style={{ color: 'inherit', textDecoration: 'none' }}>
                Carapace
              </Link>
            </Title>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <HelpMenu />
            <Text size="sm" c="dimmed" truncate="end" maw={200} title={user.data.full_name || user.data.login}>
              <VisuallyHidden>Signed in as </VisuallyHidden>
              {user.data.login}
            </Text>
            <Button variant="default" size="xs" onClick={() => void signOut()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Main" style={hidden ? { visibility: 'hidden' } : undefined}>
        <AppShell.Section grow component={ScrollArea}>
          <NavLinks items={main} pathname={pathname} />
          {admin.length > 0 && (
            <>
              <Text size="xs" fw={700} c="dimmed" tt="uppercase" px="sm" pt="md" pb={4} id="nav-admin">
                Administration
              </Text>
              <div role="group" aria-labelledby="nav-admin">
                <NavLinks items={admin} pathname={pathname} />
              </div>
            </>
          )}
        </AppShell.Section>
      </AppShell.Navbar>
      <AppShell.Main>
        <Suspense
          fallback={
            <Center py="xl">
              <Loader aria-label="Loading the page" />
            </Center>
          }
        >
          <Outlet />
        </Suspense>
      </AppShell.Main>
    </AppShell>
  );
}
