"""The authorizer's decisions against Kafka's rules (StandardAuthorizerData.findAclRule/findResult,
the Authorizer interface's authorizeByResourceType, ResourcePatternFilter/AccessControlEntryFilter):
super users, deny before allow, the DESCRIBE and DESCRIBE_CONFIGS an ALLOW implies, ALL, User:*
and host matching, literal / "*" / prefixed patterns, allow.everyone.if.no.acl.found, the
dominated-deny rules of authorize_by_resource_type, and the filters DescribeAcls and DeleteAcls
select by."""

from __future__ import annotations

import pytest

from wirekafka.security.acl.authorizer import (OPERATIONS, AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                         Authorizer, PatternType, PermissionType, ResourcePattern, ResourceType,
                                         parse_super_users)

Op, Perm, Pat, Res = AclOperation, PermissionType, PatternType, ResourceType
HOST = "10.0.0.1"


def acl(name: str, op: AclOperation, permission: PermissionType = Perm.ALLOW, principal: str = "User:alice",
        pattern: PatternType = Pat.LITERAL, host: str = "*", rtype: ResourceType = Res.TOPIC) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, permission))


def authorizer(*bindings: AclBinding, super_users: str = "", allow_if_none: bool = False) -> Authorizer:
    a = Authorizer(parse_super_users(super_users), allow_if_none)
    a.add(bindings)
    return a


def may(a: Authorizer, op: AclOperation, name: str = "orders", principal: str = "User:alice", host: str = HOST,
        rtype: ResourceType = Res.TOPIC) -> bool:
    return a.authorize(principal, host, op, rtype, name)


# ---- super users ---------------------------------------------------------------------------------
def test_super_users_may_do_anything_even_against_a_deny():
    a = authorizer(acl("orders", Op.ALL, Perm.DENY, principal="User:admin"), super_users=" User:admin ;;User:ops")
    assert may(a, Op.WRITE, principal="User:admin") and may(a, Op.ALTER, principal="User:ops")
    assert a.is_super_user("User:admin") and not a.is_super_user("User:alice")


def test_parse_super_users_splits_on_semicolons_and_drops_blanks():
    assert parse_super_users(" User:a ; User:b;; ") == {"User:a", "User:b"}
    assert parse_super_users("") == frozenset()


# ---- deny before allow, ALL -----------------------------------------------------------------------
def test_an_allow_allows_only_its_operation():
    a = authorizer(acl("orders", Op.WRITE))
    assert may(a, Op.WRITE) and not may(a, Op.READ) and not may(a, Op.CREATE)


def test_a_deny_wins_over_an_allow_whatever_the_patterns():
    a = authorizer(acl("orders", Op.ALL), acl("ord", Op.READ, Perm.DENY, pattern=Pat.PREFIXED))
    assert not may(a, Op.READ)
    assert may(a, Op.WRITE)


def test_a_deny_of_all_denies_every_operation():
    a = authorizer(acl("orders", Op.READ), acl("*", Op.ALL, Perm.DENY))
    assert not any(may(a, op) for op in OPERATIONS[Res.TOPIC])


def test_an_allow_of_all_allows_every_operation():
    a = authorizer(acl("orders", Op.ALL))
    assert all(may(a, op) for op in OPERATIONS[Res.TOPIC])


# ---- implied operations -----------------------------------------------------------------------------
@pytest.mark.parametrize("op", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_an_allow_of_read_write_delete_alter_implies_describe(op):
    assert may(authorizer(acl("orders", op)), Op.DESCRIBE)


@pytest.mark.parametrize("op", [Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.CLUSTER_ACTION,
                                Op.IDEMPOTENT_WRITE])
def test_other_allows_do_not_imply_describe(op):
    assert not may(authorizer(acl("orders", op)), Op.DESCRIBE)


def test_alter_configs_implies_describe_configs_and_nothing_else():
    a = authorizer(acl("orders", Op.ALTER_CONFIGS))
    assert may(a, Op.DESCRIBE_CONFIGS) and not may(a, Op.DESCRIBE) and not may(a, Op.ALTER)


def test_a_deny_implies_nothing():
    """A DENY of READ does not deny DESCRIBE (Kafka's findResult compares a deny's operation
    exactly), and a DENY of ALTER_CONFIGS leaves DESCRIBE_CONFIGS to the allow."""
    a = authorizer(acl("orders", Op.ALL), acl("orders", Op.READ, Perm.DENY),
                   acl("orders", Op.ALTER_CONFIGS, Perm.DENY))
    assert may(a, Op.DESCRIBE) and may(a, Op.DESCRIBE_CONFIGS)
    assert not may(a, Op.READ) and not may(a, Op.ALTER_CONFIGS)


def test_a_describe_deny_overrides_an_implied_describe():
    a = authorizer(acl("orders", Op.READ), acl("orders", Op.DESCRIBE, Perm.DENY))
    assert may(a, Op.READ) and not may(a, Op.DESCRIBE)


# ---- principals and hosts ----------------------------------------------------------------------
def test_user_star_applies_to_every_user_and_another_users_acl_to_nobody_else():
    a = authorizer(acl("orders", Op.READ, principal="User:*"), acl("orders", Op.WRITE, principal="User:bob"))
    assert may(a, Op.READ, principal="User:carol")
    assert not may(a, Op.WRITE, principal="User:carol") and may(a, Op.WRITE, principal="User:bob")


def test_a_wildcard_only_in_user_star_form():
    """Only "User:*" is the wildcard principal; "Group:*" names a principal literally."""
    a = authorizer(acl("orders", Op.READ, principal="Group:*"))
    assert not may(a, Op.READ)


def test_a_deny_for_user_star_denies_everyone_but_super_users():
    a = authorizer(acl("orders", Op.READ), acl("orders", Op.READ, Perm.DENY, principal="User:*"),
                   super_users="User:admin")
    assert not may(a, Op.READ) and may(a, Op.READ, principal="User:admin")


def test_hosts_match_exactly_or_by_star():
    a = authorizer(acl("orders", Op.READ, host=HOST), acl("orders", Op.WRITE, host="*"),
                   acl("orders", Op.WRITE, Perm.DENY, host="10.0.0.2"))
    assert may(a, Op.READ) and not may(a, Op.READ, host="10.0.0.2")
    assert may(a, Op.WRITE) and not may(a, Op.WRITE, host="10.0.0.2")


# ---- patterns -----------------------------------------------------------------------------------
def test_a_literal_acl_applies_to_its_name_only():
    a = authorizer(acl("orders", Op.READ))
    assert may(a, Op.READ, "orders") and not may(a, Op.READ, "orders2") and not may(a, Op.READ, "order")


def test_the_literal_wildcard_applies_to_every_name_of_its_type():
    a = authorizer(acl("*", Op.READ))
    assert may(a, Op.READ, "anything") and may(a, Op.READ, "*")
    assert not may(a, Op.READ, "anything", rtype=Res.GROUP)


def test_a_prefixed_acl_applies_to_names_starting_with_it():
    a = authorizer(acl("ord", Op.READ, pattern=Pat.PREFIXED))
    assert may(a, Op.READ, "ord") and may(a, Op.READ, "orders") and not may(a, Op.READ, "or")
    assert not may(a, Op.READ, "xorders")


def test_a_prefixed_star_is_a_literal_prefix_not_a_wildcard():
    a = authorizer(acl("*", Op.READ, pattern=Pat.PREFIXED))
    assert may(a, Op.READ, "*x") and not may(a, Op.READ, "orders")


def test_patterns_apply_per_resource_type():
    a = authorizer(acl("orders", Op.READ, rtype=Res.GROUP))
    assert may(a, Op.READ, rtype=Res.GROUP) and not may(a, Op.READ)


def test_every_applicable_prefix_counts():
    """Kafka walks every prefix of the name (its sorted set in reverse name order), so a deny on a
    short prefix is found behind allows on longer ones."""
    a = authorizer(acl("orders-eu", Op.READ, pattern=Pat.PREFIXED), acl("orders-e", Op.READ, pattern=Pat.PREFIXED),
                   acl("orders-a", Op.READ, Perm.DENY, pattern=Pat.PREFIXED),
                   acl("o", Op.READ, Perm.DENY, pattern=Pat.PREFIXED, principal="User:bob"))
    assert may(a, Op.READ, "orders-eu-1")
    assert not may(a, Op.READ, "orders-eu-1", principal="User:bob")


# ---- allow.everyone.if.no.acl.found ---------------------------------------------------------------
def test_no_acl_on_the_resource_denies_by_default():
    assert not may(authorizer(), Op.READ)


def test_allow_everyone_applies_only_when_no_acl_at_all_applies_to_the_resource():
    a = authorizer(acl("orders", Op.WRITE, principal="User:bob"), acl("audit", Op.READ, pattern=Pat.PREFIXED),
                   acl("other", Op.READ, rtype=Res.GROUP), allow_if_none=True)
    assert may(a, Op.READ, "payments")             # no ACL applies
    assert may(a, Op.READ, "orders", rtype=Res.GROUP)  # another type's ACLs do not count
    assert not may(a, Op.READ, "orders")           # bob's ACL applies to the resource
    assert not may(a, Op.WRITE, "audit-log")       # so does alice's prefixed READ
    assert may(a, Op.DESCRIBE, "audit-log")         # implied by that READ


def test_a_wildcard_acl_takes_every_resource_of_its_type_out_of_allow_everyone():
    a = authorizer(acl("*", Op.READ, principal="User:bob"), allow_if_none=True)
    assert not may(a, Op.READ, "payments")


# ---- authorized operations ---------------------------------------------------------------------------
def test_authorized_operations_sets_one_bit_per_allowed_supported_operation():
    a = authorizer(acl("orders", Op.READ), acl("orders", Op.ALTER_CONFIGS))
    bits = a.authorized_operations("User:alice", HOST, Res.TOPIC, "orders")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (1 << Op.DESCRIBE_CONFIGS)


def test_authorized_operations_of_a_super_user_are_the_types_supported_operations():
    a = authorizer(super_users="User:admin")
    assert a.authorized_operations("User:admin", HOST, Res.TRANSACTIONAL_ID, "tx") == (
        (1 << Op.DESCRIBE) | (1 << Op.WRITE) | (1 << Op.TWO_PHASE_COMMIT))


# ---- authorize_by_resource_type ---------------------------------------------------------------------
def by_type(a: Authorizer, op: AclOperation = Op.WRITE, principal: str = "User:alice", host: str = HOST) -> bool:
    return a.authorize_by_resource_type(principal, host, op, Res.TOPIC)


def test_by_type_allows_a_super_user_and_allow_everyone_without_acls():
    assert by_type(authorizer(super_users="User:alice"))
    assert by_type(authorizer(allow_if_none=True))
    assert not by_type(authorizer())


def test_by_type_allows_on_any_literal_or_prefixed_allow():
    assert by_type(authorizer(acl("orders", Op.WRITE)))
    assert by_type(authorizer(acl("ord", Op.ALL, pattern=Pat.PREFIXED)))
    assert not by_type(authorizer(acl("orders", Op.READ)))


def test_by_type_counts_only_the_exact_operation_or_all():
    """No implication here: an ALLOW of WRITE is no DESCRIBE by resource type."""
    assert not by_type(authorizer(acl("orders", Op.WRITE)), Op.DESCRIBE)


def test_by_type_ignores_other_principals_hosts_and_types():
    assert not by_type(authorizer(acl("orders", Op.WRITE, principal="User:bob")))
    assert not by_type(authorizer(acl("orders", Op.WRITE, host="10.9.9.9")))
    assert not by_type(authorizer(acl("orders", Op.WRITE, rtype=Res.GROUP)))
    assert by_type(authorizer(acl("orders", Op.WRITE, principal="User:*")))


def test_by_type_a_literal_allow_is_dominated_by_the_same_literal_deny_or_a_prefix_deny():
    assert not by_type(authorizer(acl("orders", Op.WRITE), acl("orders", Op.WRITE, Perm.DENY)))
    assert not by_type(authorizer(acl("orders", Op.WRITE), acl("ord", Op.ALL, Perm.DENY, pattern=Pat.PREFIXED)))
    assert by_type(authorizer(acl("orders", Op.WRITE), acl("orders2", Op.WRITE, Perm.DENY)))
    assert by_type(authorizer(acl("orders", Op.WRITE), acl("ordersX", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED)))


def test_by_type_a_prefixed_allow_is_dominated_only_by_a_prefix_deny_not_a_literal_one():
    assert not by_type(authorizer(acl("ord", Op.WRITE, pattern=Pat.PREFIXED),
                                  acl("or", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED)))
    assert by_type(authorizer(acl("ord", Op.WRITE, pattern=Pat.PREFIXED), acl("ord", Op.WRITE, Perm.DENY)))
    assert by_type(authorizer(acl("ord", Op.WRITE, pattern=Pat.PREFIXED),
                              acl("orde", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED)))


def test_by_type_one_undominated_allow_is_enough():
    assert by_type(authorizer(acl("orders", Op.WRITE), acl("orders", Op.WRITE, Perm.DENY), acl("audit", Op.WRITE)))


def test_by_type_a_wildcard_deny_denies_and_a_wildcard_allow_allows_otherwise():
    assert not by_type(authorizer(acl("orders", Op.WRITE), acl("*", Op.WRITE, Perm.DENY)))
    assert by_type(authorizer(acl("*", Op.WRITE), acl("orders", Op.WRITE, Perm.DENY)))
    assert not by_type(authorizer(acl("*", Op.WRITE), acl("*", Op.ALL, Perm.DENY)))


def test_by_type_a_deny_on_hardcode_is_just_a_literal_deny():
    """Kafka first asks authorize() for a resource called "hardcode" (super users and allow
    everyone pass there); a DENY on that very name then dominates only a literal "hardcode"."""
    a = authorizer(acl("hardcode", Op.WRITE, Perm.DENY), acl("orders", Op.WRITE))
    assert by_type(a)


# ---- the ACLs and the filters ------------------------------------------------------------------------
def test_add_is_idempotent_and_remove_forgets_empty_patterns():
    a = authorizer()
    b = acl("orders", Op.READ)
    a.add([b, b])
    assert a.bindings() == [b]
    a.remove([b, acl("never", Op.READ)])
    assert a.bindings() == [] and not may(a, Op.READ)


def test_set_resource_replaces_one_patterns_entries():
    a = authorizer(acl("orders", Op.READ), acl("other", Op.READ))
    pattern = ResourcePattern(Res.TOPIC, "orders", Pat.LITERAL)
    a.set_resource(pattern, [AccessControlEntry("User:bob", "*", Op.WRITE, Perm.ALLOW)])
    assert set(a.bindings()) == {acl("orders", Op.WRITE, principal="User:bob"), acl("other", Op.READ)}
    a.set_resource(pattern, [])
    assert a.bindings() == [acl("other", Op.READ)]


def test_replace_all_drops_what_was_there():
    a = authorizer(acl("orders", Op.READ))
    a.replace_all([acl("other", Op.READ)])
    assert a.bindings() == [acl("other", Op.READ)]


STORED = [acl("orders", Op.READ), acl("*", Op.READ), acl("ord", Op.WRITE, pattern=Pat.PREFIXED),
          acl("orders", Op.WRITE, pattern=Pat.PREFIXED), acl("payments", Op.READ),
          acl("orders", Op.READ, rtype=Res.GROUP), acl("orders", Op.READ, Perm.DENY, principal="User:bob", host=HOST)]


def selected(selector: AclBindingFilter) -> set[AclBinding]:
    return set(authorizer(*STORED).matching(selector))


def test_the_any_filter_selects_everything():
    assert selected(AclBindingFilter()) == set(STORED)


def test_match_selects_the_literal_name_the_wildcard_and_every_prefix_of_the_name():
    assert selected(AclBindingFilter(Res.TOPIC, "orders", Pat.MATCH)) == {
        STORED[0], STORED[1], STORED[2], STORED[3], STORED[6]}
    assert selected(AclBindingFilter(Res.TOPIC, "ordinal", Pat.MATCH)) == {STORED[1], STORED[2]}


def test_match_without_a_name_selects_every_pattern_type():
    assert selected(AclBindingFilter(Res.TOPIC, None, Pat.MATCH)) == set(STORED) - {STORED[5]}


def test_any_with_a_name_selects_that_exact_name_in_every_pattern_type():
    assert selected(AclBindingFilter(Res.TOPIC, "orders", Pat.ANY)) == {STORED[0], STORED[3], STORED[6]}


def test_literal_and_prefixed_select_their_pattern_type_and_exact_name():
    assert selected(AclBindingFilter(Res.TOPIC, "orders", Pat.LITERAL)) == {STORED[0], STORED[6]}
    assert selected(AclBindingFilter(Res.TOPIC, "*", Pat.LITERAL)) == {STORED[1]}
    assert selected(AclBindingFilter(Res.ANY, "orders", Pat.PREFIXED)) == {STORED[3]}
    assert selected(AclBindingFilter(Res.TOPIC, None, Pat.PREFIXED)) == {STORED[2], STORED[3]}


def test_entry_filters_select_exactly():
    assert selected(AclBindingFilter(principal="User:bob")) == {STORED[6]}
    assert selected(AclBindingFilter(host=HOST)) == {STORED[6]}
    assert selected(AclBindingFilter(host="10.0.0.2")) == set()
    assert selected(AclBindingFilter(operation=Op.WRITE)) == {STORED[2], STORED[3]}
    assert selected(AclBindingFilter(permission=Perm.DENY)) == {STORED[6]}


def test_a_filter_does_not_imply_operations():
    """A DESCRIBE filter selects DESCRIBE ACLs only, not the READs that imply it, nor ALL."""
    a = authorizer(acl("orders", Op.READ), acl("orders", Op.ALL))
    assert a.matching(AclBindingFilter(operation=Op.DESCRIBE)) == []


def test_unknown_filter_values_select_nothing():
    assert selected(AclBindingFilter(resource_type=Res.UNKNOWN)) == set()
    assert selected(AclBindingFilter(pattern_type=Pat.UNKNOWN)) == set()
    assert selected(AclBindingFilter(operation=Op.UNKNOWN)) == set()


# ---- the prefix index ------------------------------------------------------------------------------
@pytest.mark.parametrize("others", [0, 40], ids=["few-prefixes", "more-prefixes-than-letters"])
def test_prefixed_patterns_are_found_whichever_way_the_index_is_walked(others: int):
    """A decision looks prefixes up by the name's own prefixes or by the stored ones, whichever
    are fewer; both find the same patterns, and a removed pattern stops applying."""
    noise = [acl(f"zz{i}-", Op.READ, pattern=Pat.PREFIXED) for i in range(others)]
    granted = acl("ord", Op.READ, pattern=Pat.PREFIXED)
    denied = acl("orders-e", Op.READ, Perm.DENY, pattern=Pat.PREFIXED)
    a = authorizer(*noise, granted, denied)
    assert may(a, Op.READ, "orders") and may(a, Op.READ, "ord") and not may(a, Op.READ, "or")
    assert not may(a, Op.READ, "orders-eu")
    a.remove([denied])
    assert may(a, Op.READ, "orders-eu")
    a.remove([granted])
    assert not may(a, Op.READ, "orders") and may(authorizer(allow_if_none=True), Op.READ, "orders")
    a.set_resource(granted.pattern, [granted.entry])
    assert may(a, Op.READ, "orders")
