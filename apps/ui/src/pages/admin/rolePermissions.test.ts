import { describe, expect, it } from 'vitest';
import { countPermissions, groupsOf, selectionOf } from './rolePermissions.ts';

const known = [
  { name: 'api', permissions: ['create_user', 'view_user'] },
  { name: 'playbook', permissions: ['hello_world'] },
];

describe('role permissions', () => {
  it('turns a selection into the API groups, sorted and limited to known names', () => {
    expect(groupsOf({ api: ['view_user', 'create_user', 'bogus'] }, known)).toEqual([
      { name: 'api', permissions: ['create_user', 'view_user'] },
      { name: 'playbook', permissions: [] },
    ]);
    expect(selectionOf([{ name: 'playbook', permissions: ['hello_world'] }])).toEqual({ playbook: ['hello_world'] });
    expect(countPermissions(known)).toBe(3);
  });
});
