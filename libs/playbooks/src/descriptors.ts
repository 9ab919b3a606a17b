import type { PlaybookDescriptor, PlaybookPermission } from '@carapace/models';

const dmcrypt = {
  id: 'dmcrypt',
  description: 'Encrypt the data of the OSDs at rest (dm-crypt).',
  type: 'boolean',
  values: [],
  default_value: false,
};

/** Descriptor of a playbook, with its id narrowed to the known playbook permissions. */
export interface Descriptor extends PlaybookDescriptor {
  id: PlaybookPermission;
}

/** The descriptors of every playbook Carapace ships, sorted by name. */
export const PLAYBOOK_DESCRIPTORS: readonly Descriptor[] = [
  {
    id: 'add_osd',
    name: 'Add OSD host',
    description: 'Adds new hosts with OSDs to a cluster.',
    required_server_list: true,
    hints: [dmcrypt],
  },
  {
    id: 'cinder_integration',
    name: 'OpenStack integration (Cinder, Glance, Nova)',
    description:
      'Creates the RBD pools volumes, images, vms and backups and the keys client.cinder, client.glance and client.cinder-backup that OpenStack uses, and keeps ceph.conf and the keyrings with the cluster as its Cinder integration files.',
    required_server_list: false,
    hints: [],
  },
  {
    id: 'cluster_deploy',
    name: 'Deploy Ceph cluster',
    description: 'Deploys a new Ceph cluster: monitors, managers and OSDs on the given servers.',
    required_server_list: true,
    hints: [
      dmcrypt,
      {
        id: 'mon_count',
        description: 'How many of the servers become monitors.',
        type: 'integer',
        values: [],
        default_value: 3,
      },
    ],
  },
  {
    id: 'hello_world',
    name: 'Hello world',
    description: 'Installs a tiny service answering {"result": "ok"} on port 8085: checks that hosts can be managed.',
    required_server_list: false,
    hints: [],
  },
  {
    id: 'purge_cluster',
    name: 'Purge whole cluster',
    description: 'Removes Ceph from every server of the cluster and deletes the cluster.',
    required_server_list: false,
    hints: [],
  },
  {
    id: 'remove_osd',
    name: 'Remove OSD host',
    description: 'Removes hosts with OSDs from a cluster.',
    required_server_list: true,
    hints: [
      {
        id: 'safe_to_destroy_timeout',
        description:
          'How long to wait (seconds) after marking the OSDs out until Ceph says their data is safe elsewhere; past it the run fails and leaves the OSDs in place.',
        type: 'integer',
        values: [],
        default_value: 600,
      },
    ],
  },
].sort((a, b) => a.name.localeCompare(b.name)) as Descriptor[];

/** Finds a playbook descriptor by id. */
export function findPlaybook(id: string): Descriptor | undefined {
  return PLAYBOOK_DESCRIPTORS.find((p) => p.id === id);
}
