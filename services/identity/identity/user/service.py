"""Business rules for users: creation, updates, (de)activation, credentials, and who may
do which of them.

Who is acting is :func:`identity.core.auth.acting_user` (a user's managing tokens; a
workload token only reads the current user). An admin manages every account; any other
user reads and updates its own. A service token (client credentials) may list users, to
show a creator in ``resources.user``, and nothing else: 403, not 401, which would make
the service fetch a new token and retry.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass

from sqlmodel.ext.asyncio.session import AsyncSession

from identity.core.auth import USER_TOKEN_KINDS, acting_user
from identity.models import User
from identity.user.repository import UserRepository
from identity.user.schemas import UserRequest, UserUpdate
from shared.auth import Principal, RevocationList, TokenKind
from shared.db import Clock, utcnow
from shared.errors import (
    AuthorizationFailed,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
)
from shared.listing import Listing
from shared.passwords import (
    MIN_PASSWORD_LENGTH,
    generate_password,
    hash_password,
    verify_password,
)
from shared.secret_hash import digest, matches

logger = logging.getLogger(__name__)


class UserNotFound(NotFound):
    def __init__(self, name_or_id: object) -> None:
        super().__init__(
            f"Unable to get user with name or ID '{name_or_id}': No user with this name or ID found"
        )


class UserAlreadyExists(Conflict):
    def __init__(self, name: str, action: str = "create") -> None:
        super().__init__(
            f"Unable to {action} the requested user with name '{name}': "
            "Found another existing user with the same name."
        )


class LastAdmin(Forbidden):
    """The change would leave no active admin (so nobody who could manage accounts)."""

    def __init__(self, name: str, change: str) -> None:
        super().__init__(
            f"There has to be at least one active admin account at all times: '{name}' "
            f"is the only one, so it cannot be {change}."
        )


class WeakPassword(BadRequest):
    def __init__(self) -> None:
        super().__init__(f"The password must be at least {MIN_PASSWORD_LENGTH} characters long.")


def new_activation_token() -> tuple[str, str]:
    """A one-time activation token (256 bits) and the hash that is stored."""
    token = secrets.token_urlsafe(32)
    return token, digest(token)


@dataclass
class Created:
    user: User
    activation_token: str | None


class UserService:
    def __init__(
        self,
        session: AsyncSession,
        revocations: RevocationList | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self.repository = UserRepository(session)
        self.revocations = revocations
        self.clock = clock

    # What the acting user may do (``caller``: the request's verified token).

    async def current(self, caller: Principal) -> User:
        """The caller's own account, for any of a user's tokens."""
        return await acting_user(self.repository.session, caller, kinds=USER_TOKEN_KINDS)

    async def update_current(self, caller: Principal, update: UserUpdate) -> User:
        user = await acting_user(self.repository.session, caller)
        if user.is_service_account:
            # Its account is /service_accounts' (a password would open a second login).
            raise UserNotFound(user.id)
        return await self.update(user, update, by_admin=user.is_admin, actor=str(user.id))

    async def create_for(self, caller: Principal, request: UserRequest) -> Created:
        await self.admin(caller)
        return await self.create(request)

    async def list_for(self, caller: Principal, listing: Listing) -> tuple[int, list[User]]:
        """Users only, as the reference lists them; a service (showing who created a
        resource) also sees the service accounts."""
        if caller.kind == TokenKind.SERVICE:
            return await self.repository.list(listing, service_accounts=True)
        await self.admin(caller)
        return await self.repository.list(listing)

    async def get_for(self, caller: Principal, name_or_id: str) -> User:
        actor = await self._actor(caller)
        user = await self.get(name_or_id, service_accounts=True)
        if user.id != actor.id and not actor.is_admin:
            raise Forbidden("Only admins can read other accounts.")
        return user

    async def update_for(self, caller: Principal, name_or_id: str, update: UserUpdate) -> User:
        actor = await self._actor(caller)
        user = await self.get(name_or_id)
        if user.id != actor.id and not actor.is_admin:
            raise Forbidden("Only admins can update other accounts.")
        return await self.update(user, update, by_admin=actor.is_admin, actor=str(actor.id))

    async def email_opt_in_for(
        self, caller: Principal, name_or_id: str, answer: UserUpdate
    ) -> User:
        """A user's answer to the email prompt: their email and whether they opted in. As
        the reference, only for oneself and named by id (a name is refused as another's)."""
        actor = await self._actor(caller)
        user = await self.get(name_or_id)
        if str(actor.id) != name_or_id:
            raise AuthorizationFailed("Users can not opt in on behalf of another user.")
        only = UserUpdate(email=answer.email, email_opted_in=answer.email_opted_in)
        return await self.update(user, only, by_admin=False, actor=str(actor.id))

    async def deactivate_for(self, caller: Principal, name_or_id: str) -> tuple[User, str]:
        """The deactivated account and its fresh activation token."""
        actor = await self.admin(caller)
        user = await self.get(name_or_id)
        if user.id == actor.id:
            raise Forbidden("An account cannot deactivate itself.")
        return user, await self.deactivate(user)

    async def delete_for(self, caller: Principal, name_or_id: str) -> None:
        actor = await self.admin(caller)
        await self.delete(await self.get(name_or_id), actor=str(actor.id))

    async def _actor(self, caller: Principal) -> User:
        if caller.kind == TokenKind.SERVICE:
            raise Forbidden("A service token may only list users.")
        return await acting_user(self.repository.session, caller)

    async def admin(self, caller: Principal, action: str = "manage other accounts") -> User:
        """The active admin behind ``caller``; 403 for anyone else."""
        actor = await self._actor(caller)
        if not actor.is_admin:
            raise Forbidden(f"Only admins can {action}.")
        return actor

    # The rules themselves.

    async def get(self, name_or_id: str, *, service_accounts: bool = False) -> User:
        """The user with this name or id; a service account only by its id, and only
        with ``service_accounts`` (reading it as a user, as the reference does). Everything
        else that changes a service account is /service_accounts' business."""
        user = await self.repository.by_name_or_id(name_or_id)
        if user is None or (
            user.is_service_account and (not service_accounts or user.name == name_or_id)
        ):
            raise UserNotFound(name_or_id)
        return user

    async def create(self, request: UserRequest) -> Created:
        if await self.repository.by_name(request.name) is not None:
            raise UserAlreadyExists(request.name)
        now = self.clock()
        user = User(
            created=now,
            updated=now,
            name=request.name,
            full_name=request.full_name,
            is_admin=request.is_admin,
            email=request.email,
            email_opted_in=request.email_opted_in,
            external_user_id=request.external_user_id,
            user_metadata=request.user_metadata or {},
            avatar_url=request.avatar_url,
        )
        activation_token = None
        if request.password is not None:
            await self._set_password(user, request.password)
            user.active = request.active
        else:
            # Without a password the account waits for its owner to activate it.
            activation_token, user.activation_token_hash = new_activation_token()
            user.active = False
        self.repository.add(user)
        await self.repository.session.flush()
        return Created(user, activation_token)

    async def ensure_default_admin(self, name: str, password: str | None) -> str | None:
        """Create the first admin when no user exists; returns a generated password."""
        if await self.repository.count_admins() > 0 or await self.repository.by_name(name):
            return None
        generated = None
        if password is None:
            generated = password = generate_password()
        now = self.clock()
        user = User(name=name, is_admin=True, active=True, created=now, updated=now)
        user.password_hash = await hash_password(password)
        user.password_changed_at = now
        self.repository.add(user)
        await self.repository.session.flush()
        return generated

    async def update(self, user: User, update: UserUpdate, *, by_admin: bool, actor: str) -> User:
        changes = update.model_dump(exclude_unset=True)
        if "name" in changes and update.name and update.name != user.name:
            if await self.repository.by_name(update.name) is not None:
                raise UserAlreadyExists(update.name, "update")
            user.name = update.name
        for field in ("full_name", "email", "email_opted_in", "avatar_url", "default_project_id"):
            if field in changes and (changes[field] is not None or field != "full_name"):
                setattr(user, field, changes[field])
        if update.user_metadata is not None:
            user.user_metadata = update.user_metadata
        if update.is_admin is not None and update.is_admin != user.is_admin:
            if not by_admin:
                raise Forbidden("Only admins can change the admin flag of an account.")
            if str(user.id) == actor:
                raise Forbidden("An account cannot change its own admin flag.")
            if not update.is_admin:
                await self._keep_an_admin(user, "demoted")
            user.is_admin = update.is_admin
        if update.active is not None and update.active != user.active:
            if not by_admin:
                raise Forbidden("Only admins can activate or deactivate accounts.")
            if str(user.id) == actor:
                raise Forbidden("An account cannot change its own active status.")
            if not update.active:
                await self._keep_an_admin(user, "deactivated")
            user.active = update.active
            if not user.active:
                await self._revoke_all(user)
        if update.password is not None:
            changing_own = not by_admin or str(user.id) == actor
            if changing_own and not await verify_password(
                user.password_hash, update.old_password or ""
            ):
                raise BadRequest("The current password is not correct.")
            await self._set_password(user, update.password)
            await self._revoke_all(user)
        return await self._save(user)

    async def deactivate(self, user: User) -> str:
        """Lock the user out, end their sessions, and return a fresh activation token."""
        await self._keep_an_admin(user, "deactivated")
        token, user.activation_token_hash = new_activation_token()
        user.active = False
        await self._revoke_all(user)
        await self._save(user)
        return token

    async def activate(self, user: User, update: UserUpdate) -> User:
        """Activate with the one-time token and set the password."""
        token = update.activation_token or ""
        stored = user.activation_token_hash
        if user.active or not matches(stored, token):
            raise Forbidden("The activation token is not valid for this account.")
        if update.password is None:
            raise BadRequest("A password is required to activate the account.")
        await self._set_password(user, update.password)
        user.activation_token_hash = None
        user.active = True
        return await self._save(user)

    async def delete(self, user: User, *, actor: str) -> None:
        if str(user.id) == actor:
            raise Forbidden("An account cannot delete itself.")
        await self._keep_an_admin(user, "deleted")
        await self.remove(user)

    async def remove(self, user: User) -> None:
        """Delete the account (a user or service account, whoever may) and refuse every
        token of it from now on, on every service, whenever it was issued."""
        await self.repository.delete(user)
        await self.repository.session.flush()
        # After the delete has reached the database, so that an account left in place by
        # a failed delete is not refused for good; Redis failing rolls the delete back.
        if self.revocations is not None:
            await self.revocations.revoke_deleted_subject(str(user.id))

    # An operator's recovery (``python -m identity reset-password|make-admin``), for when
    # no admin can log in to do it through the API.

    async def reset_password(
        self, name_or_id: str, password: str | None
    ) -> tuple[User, str | None]:
        """Make the account active with ``password``, or a generated one, void its
        activation token and end its sessions; the account and the generated password."""
        user = await self.get(name_or_id)
        generated = None
        if password is None:
            generated = password = generate_password()
        await self._set_password(user, password)
        user.active = True
        user.activation_token_hash = None
        await self._revoke_all(user)
        return await self._save(user), generated

    async def make_admin(self, name_or_id: str) -> User:
        """Make the account an admin, and active if it has a password (one still waiting
        for its activation keeps its one-time token: it can be activated as before)."""
        user = await self.get(name_or_id)
        user.is_admin = True
        if user.password_hash is not None:
            user.active = True
            user.activation_token_hash = None
        return await self._save(user)

    async def authenticate(self, name: str, password: str) -> User | None:
        """The active user with these credentials, or None; equally slow either way."""
        user = await self.repository.by_name(name)
        ok = await verify_password(user.password_hash if user else None, password)
        if user is None or not ok or not user.active:
            return None
        return user

    async def _save(self, user: User) -> User:
        user.updated = self.clock()
        self.repository.add(user)
        await self.repository.session.flush()
        return user

    async def _keep_an_admin(self, user: User, change: str) -> None:
        """Refuse (403) to take ``user`` out of the active admins if it is the last one."""
        if not (user.is_admin and user.active):
            return
        if all(admin_id == user.id for admin_id in await self.repository.lock_active_admins()):
            raise LastAdmin(user.name, change)

    async def _set_password(self, user: User, password: str) -> None:
        if len(password) < MIN_PASSWORD_LENGTH:
            raise WeakPassword()
        user.password_hash = await hash_password(password)
        user.password_changed_at = self.clock()

    async def _revoke_all(self, user: User) -> None:
        # Inside the transaction: if Redis cannot take it, the change rolls back (503).
        if self.revocations is not None:
            await self.revocations.revoke_subject(str(user.id), before=self.clock())
