"""What the front-ends that serve tenants share: the service (server/) and the cluster
(cluster/) speak one wire (wire.py: a run's request and result as JSON), check one kind of key
(tenant_keys.py), count one kind of quota (quotas.py), and meet at the protocols one
implements for the other (protocols.py: where runs and sessions go). The command line's
remote client (cli/remote.py) speaks the same wire. Nothing below the front-ends imports this
package.
"""
