"""Validates rendered chart manifests, the way an API server would, without one.

  validate.py --kube 1.25.0 --kube 1.37.0 --crds DIR [--crds DIR ...] --out DIR RENDERED.yaml ...

Built-in kinds go to kubernetes-validate (strict: unknown fields are errors) at every --kube version; custom
resources (KEDA, Prometheus Operator) to the openAPIV3Schema of their CRD version found in the --crds
directories, made strict the same way (additionalProperties false wherever the schema lists properties and does
not preserve unknown fields). Writes each file's documents as JSON to --out/<name>.json (the jest spec reads
them) and prints one line per file; exits 1 on any failure.
"""
import argparse
import copy
import glob
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml


# PyYAML reads a bare "=" (an enum value in the Prometheus Operator's CRDs) as YAML 1.1's value tag: keep it a string.
yaml.SafeLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def strict_schema(schema):
    """The CRD schema with unknown fields refused, as the API server's strict field validation does."""
    schema = copy.deepcopy(schema)

    def visit(node):
        if isinstance(node, dict):
            if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields") \
                    and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


def crd_schemas(directories):
    """{(apiVersion, kind): schema} from every CRD file in the directories."""
    schemas = {}
    for directory in directories:
        for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
            with open(path) as handle:
                for crd in yaml.safe_load_all(handle):
                    if not crd or crd.get("kind") != "CustomResourceDefinition":
                        continue
                    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
                    for version in crd["spec"]["versions"]:
                        schema = version["schema"]["openAPIV3Schema"]
                        # apiVersion, kind and metadata are the API server's; the CRD schema leaves them open.
                        schemas[(f"{group}/{version['name']}", kind)] = strict_schema(schema)
    return schemas


def metadata_problems(doc):
    """The object metadata every kind needs (CRD schemas leave metadata to the API server)."""
    meta = doc.get("metadata") or {}
    problems = []
    if not meta.get("name"):
        problems.append("metadata.name is missing")
    for key in ("labels", "annotations"):
        for name, value in (meta.get(key) or {}).items():
            if not isinstance(value, str):
                problems.append(f"metadata.{key}.{name} is not a string")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kube", action="append", required=True)
    parser.add_argument("--crds", action="append", default=[])
    parser.add_argument("--out", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    custom = crd_schemas(args.crds)
    os.makedirs(args.out, exist_ok=True)
    failures = 0
    totals = {"builtin": 0, "custom": 0}
    for path in args.files:
        with open(path) as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d]
        name = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(args.out, f"{name}.json"), "w") as handle:
            json.dump(docs, handle)
        errors = []
        kinds = {"builtin": 0, "custom": 0}
        for doc in docs:
            ident = f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
            key = (doc.get("apiVersion"), doc.get("kind"))
            if key in custom:
                kinds["custom"] += 1
                errors += [f"{ident}: {p}" for p in metadata_problems(doc)]
                body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
                for error in jsonschema.Draft7Validator(custom[key]).iter_errors(body):
                    errors.append(f"{ident} ({key[0]}): {'.'.join(map(str, error.absolute_path))}: {error.message}")
                continue
            kinds["builtin"] += 1
            for version in args.kube:
                try:
                    kubernetes_validate.validate(doc, version, strict=True)
                except kubernetes_validate.SchemaNotFoundError:
                    errors.append(f"{ident}: no schema for {key[0]} {key[1]} in Kubernetes {version} (nor a CRD given)")
                except kubernetes_validate.ValidationError as error:
                    errors.append(f"{ident} (Kubernetes {version}): {'.'.join(map(str, error.path))}: {error.message}")
        for kind in totals:
            totals[kind] += kinds[kind]
        status = "ok  " if not errors else "FAIL"
        print(f"{status} validate {name}: {kinds['builtin']} resources x Kubernetes {', '.join(args.kube)}; "
              f"{kinds['custom']} custom resources against their CRDs")
        for error in errors:
            print(f"     {error}")
        failures += bool(errors)
    print(f"validated {totals['builtin']} resources at Kubernetes {', '.join(args.kube)} and "
          f"{totals['custom']} custom resources; {failures} file(s) failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
