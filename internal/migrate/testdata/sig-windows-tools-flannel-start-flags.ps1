# The kube-proxy invocation of the Flannel HostProcess image's start.ps1 (sig-windows-tools
# hostprocess/flannel/kube-proxy), written down from the flags it passes: the source VIP is an
# address the host-local IPAM plugin reserves in the node's subnet, the network comes from
# $env:KUBE_NETWORK (the DaemonSet sets it).
$vip = Reserve-SourceVip -Ipam host-local -Network $env:KUBE_NETWORK
& kube-proxy.exe --v=6 --hostname-override=$env:NODE_NAME --feature-gates=WinOverlay=true --proxy-mode=kernelspace --source-vip=$vip --kubeconfig=$env:CONTAINER_SANDBOX_MOUNT_POINT/mounts/var/lib/kube-proxy/kubeconfig.conf
