// Licensed under the Apache License, Version 2.0 (the "License"); you may
// not use this file except in compliance with the License. You may obtain
// a copy of the License at
//
//      http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
// WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
// License for the specific language governing permissions and limitations
// under the License.

// Command cdi-manifests prints, one JSON object a line, what CDI's operator
// would install in the namespace of its first argument: the static and
// dynamic cluster resources (CRDs, RBAC, the APIService and the webhook
// configurations, without CA bundles), the namespaced ones and the CDI
// CRD. It is built inside CDI's source tree (a go build overlay), so it is
// CDI's own resource factories that answer, as virt-operator's
// --dump-install-strategy answers for KubeVirt.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"kubevirt.io/containerized-data-importer/pkg/operator/resources"
	"kubevirt.io/containerized-data-importer/pkg/operator/resources/cluster"
	"kubevirt.io/containerized-data-importer/pkg/operator/resources/namespaced"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cdi-manifests NAMESPACE VERSION")
		os.Exit(2)
	}
	namespace, version := os.Args[1], os.Args[2]
	cargs := &cluster.FactoryArgs{Namespace: namespace, Logger: logr.Discard()}
	static, err := cluster.CreateAllStaticResources(cargs)
	check(err)
	dynamic, err := cluster.CreateAllDynamicResources(cargs)
	check(err)
	image := "quay.io/kubevirt/%s:" + version
	nargs := &namespaced.FactoryArgs{
		OperatorVersion: version, Namespace: namespace,
		DeployClusterResources: "true", Verbosity: "1",
		PullPolicy:          "IfNotPresent",
		ControllerImage:     fmt.Sprintf(image, "cdi-controller"),
		ImporterImage:       fmt.Sprintf(image, "cdi-importer"),
		ClonerImage:         fmt.Sprintf(image, "cdi-cloner"),
		OvirtPopulatorImage: fmt.Sprintf(image, "cdi-ovirt-populator"),
		APIServerImage:      fmt.Sprintf(image, "cdi-apiserver"),
		UploadProxyImage:    fmt.Sprintf(image, "cdi-uploadproxy"),
		UploadServerImage:   fmt.Sprintf(image, "cdi-uploadserver"),
	}
	local, err := namespaced.CreateAllResources(nargs)
	check(err)
	out := json.NewEncoder(os.Stdout)
	for _, group := range [][]client.Object{static, dynamic, local} {
		for _, obj := range group {
			check(out.Encode(obj))
		}
	}
	var crd map[string]interface{}
	check(yaml.Unmarshal([]byte(resources.CDICRDs["cdi"]), &crd))
	check(out.Encode(crd))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
