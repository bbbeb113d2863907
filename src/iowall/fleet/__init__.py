"""Fleet: one recipe or plan on many hosts through Ansible (the playbook is ``fleet/`` in the
checkout), every host's bundle imported into one store; see docs/fleet.md."""
